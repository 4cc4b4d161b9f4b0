#include "gateway/session/op_handlers.hpp"

#include <chrono>

#include "core/log.hpp"
#include "gateway/queue/join_pow.hpp"
#include "gateway/queue/position_notifier.hpp"
#include "gateway/session/session_transport.hpp"
#include "gateway/state/inbox.hpp"

namespace pushonce::gateway {

namespace asio = boost::asio;

namespace {
long long now_ms_since_epoch() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void log_internal(const op_context& ctx, const failure& f, std::string_view op) {
  if (is_internal(f))
    log::warn("{}: {}: {} failed: {} {}", ctx.log_name, ctx.user, op, f.code, f.message);
}

// The estimated wait at `position`: the queue's pace read when the one held is a second old.
asio::awaitable<std::optional<long long>> queue_eta(const op_context& ctx, std::string queue,
                                                    long long position) {
  auto estimates = ctx.sv.positions->estimates();
  std::string q = queue;
  auto call = estimates->refresh(std::move(q));  // named: GCC 12 and co_await
  co_await std::move(call);
  co_return estimates->eta_s(queue, position);
}
}  // namespace

bool is_internal(const failure& f) {
  return client_error_code(f.code) == "internal";
}

std::string reply_failure(const failure& f, std::string_view op) {
  return render_error(f.code, f.message, op);
}

std::string reply_join(std::string_view queue, const outcome<join_result>& r,
                       std::optional<long long> eta_s) {
  if (!r) return reply_failure(r.error(), "join");
  if (r.value().opens_at) return render_joined_prequeue(queue, r.value().opens_at);
  return render_joined(queue, r.value().position, r.value().ticket, eta_s);
}

std::string reply_leave(std::string_view queue, const outcome<none>& r) {
  if (!r) return reply_failure(r.error(), "leave");
  return render_left(queue);
}

std::string reply_position(std::string_view queue, const outcome<long long>& r) {
  if (!r) return reply_failure(r.error(), "position");
  return render_position(queue, r.value());
}

std::string reply_standing(std::string_view queue, const std::string& user,
                           const outcome<queue_standing>& r, std::optional<long long> eta_s) {
  if (!r) return reply_failure(r.error(), "position");
  if (r.value().position > 0) return render_position(queue, r.value().position, eta_s);
  if (r.value().prequeued) return render_position_prequeue(queue, r.value().opens_at);
  return reply_failure(failure{errc::not_queued, user + " is not in queue " + std::string(queue)},
                       "position");
}

std::string reply_accept(const outcome<lua::accept_reply>& r) {
  if (!r) return reply_failure(r.error(), "accept");
  return render_accepted(r.value().id, r.value().expires_at);
}

std::optional<std::string> reply_ack(const outcome<none>& r) {
  if (r) return std::nullopt;
  return reply_failure(r.error(), "ack");
}

refresh_reply reply_refresh(const outcome<identity>& verified, const std::string& user,
                            token_expiry& expiry) {
  if (!verified)
    return {render_error(errc::bad_request, "refresh token refused: " + verified.error().message,
                         "refresh")};
  const auto& who = verified.value();
  if (expiry.refresh(user, who.user, who.exp) == token_expiry::refresh_verdict::other_user)
    return {render_error(errc::bad_request,
                         "the refresh token is for another user; the session keeps its token",
                         "refresh")};
  return {render_refreshed(expiry.exp_ms().value_or(0)), true};
}

asio::awaitable<void> handle_join(op_context ctx, join_op op) {
  std::string queue = std::move(op.queue), q = queue, user = ctx.user;
  // Proof of work (core/pow_challenge decides): a join without a valid solution is refused
  // with a fresh challenge; a valid one is marked used by join.lua.
  std::optional<pow_use> use;
  std::shared_ptr<const pow_gate> gate;
  int bits = 0;
  if (ctx.sv.pow) {
    std::string bq = queue;
    bits = co_await ctx.sv.pow->bits(std::move(bq));
  }
  if (bits > 0) {
    gate = co_await ctx.sv.pow->gate();
    if (!gate) {
      ctx.io.send_text(render_error(errc::internal, "proof of work unavailable", "join"));
      co_return;
    }
    auto check = gate->verify(ctx.user, queue, bits, op.pow, now_ms_since_epoch());
    if (!check.ok()) {
      ctx.sv.pow->count_refusal(queue);
      ctx.io.send_text(render_pow_refusal(pow_reason(check.verdict),
                                          join_pow::issue(*gate, ctx.user, queue, bits)));
      co_return;
    }
    use = pow_use{std::move(check.token), check.ttl_ms};
  }
  const bool with_pow = use.has_value();
  auto r = co_await ctx.sv.queues->join(std::move(q), std::move(user), std::move(use));
  if (!r && with_pow && r.error().code == errc::bad_request) {
    // join.lua: this solution was used already.
    ctx.io.send_text(
        render_pow_refusal(r.error().message, join_pow::issue(*gate, ctx.user, queue, bits)));
    co_return;
  }
  if (!r) log_internal(ctx, r.error(), "join");
  std::optional<long long> eta;
  if (r && !r.value().opens_at) {
    auto call = queue_eta(ctx, queue, r.value().position);  // named: GCC 12 and co_await
    eta = co_await std::move(call);
  }
  ctx.io.send_text(reply_join(queue, r, eta));
  if (r && r.value().opens_at)
    ctx.sv.positions->watch_prequeued(ctx.io.self(), queue, ctx.user);
  else if (r)
    ctx.sv.positions->watch(ctx.io.self(), queue, ctx.user, r.value().ticket, r.value().position,
                            r.value().seq);
}

asio::awaitable<void> handle_leave(op_context ctx, leave_op op) {
  std::string queue = std::move(op.queue), q = queue, user = ctx.user;
  auto r = co_await ctx.sv.queues->leave(std::move(q), std::move(user));
  ctx.sv.positions->unwatch(&*ctx.io.self(), queue);
  if (!r) log_internal(ctx, r.error(), "leave");
  ctx.io.send_text(reply_leave(queue, r));
}

asio::awaitable<void> handle_position(op_context ctx, position_op op) {
  std::string queue = std::move(op.queue), q = queue, user = ctx.user;
  auto r = co_await ctx.sv.queues->standing(std::move(q), std::move(user));
  if (!r) log_internal(ctx, r.error(), "position");
  std::optional<long long> eta;
  if (r && r.value().position > 0) {
    auto call = queue_eta(ctx, queue, r.value().position);  // named: GCC 12 and co_await
    eta = co_await std::move(call);
  }
  ctx.io.send_text(reply_standing(queue, ctx.user, r, eta));
  if (r && r.value().position > 0)
    ctx.sv.positions->watch(ctx.io.self(), queue, ctx.user, r.value().ticket, r.value().position,
                            r.value().seq);
  else if (r && r.value().prequeued)
    ctx.sv.positions->watch_prequeued(ctx.io.self(), queue, ctx.user);
}

asio::awaitable<void> handle_accept(op_context ctx, accept_op op) {
  std::string id = std::move(op.id), queue = std::move(op.queue), user = ctx.user;
  auto r = co_await ctx.sv.queues->accept(std::move(queue), std::move(user), std::move(id));
  if (!r) log_internal(ctx, r.error(), "accept");
  ctx.io.send_text(reply_accept(r));
}

asio::awaitable<void> handle_ack(op_context ctx, ack_op op) {
  std::string user = ctx.user, epoch = ctx.epoch;
  auto r = co_await ctx.sv.inboxes->ack(std::move(user), std::move(epoch), op.offset);
  if (!r) log_internal(ctx, r.error(), "ack");
  if (auto frame = reply_ack(r)) ctx.io.send_text(std::move(*frame));
}

void handle_ping(op_context ctx) {
  ctx.io.send_text(render_pong());
}

asio::awaitable<void> handle_op(op_context ctx, client_op op) {
  if (auto* j = std::get_if<join_op>(&op)) {
    co_await handle_join(ctx, std::move(*j));
  } else if (auto* l = std::get_if<leave_op>(&op)) {
    co_await handle_leave(ctx, std::move(*l));
  } else if (auto* p = std::get_if<position_op>(&op)) {
    co_await handle_position(ctx, std::move(*p));
  } else if (auto* a = std::get_if<accept_op>(&op)) {
    co_await handle_accept(ctx, std::move(*a));
  } else if (auto* k = std::get_if<ack_op>(&op)) {
    co_await handle_ack(ctx, *k);
  } else if (std::holds_alternative<ping_op>(op)) {
    handle_ping(ctx);
  } else if (std::holds_alternative<refresh_op>(op)) {
    ctx.io.send_text(render_error(errc::internal, "refresh is not available here", "refresh"));
  }
}

}  // namespace pushonce::gateway
