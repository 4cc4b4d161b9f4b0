#include "gateway/session/session_flow.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <random>

#include "core/exit_on_exception.hpp"
#include "core/log.hpp"
#include "core/lua/presence.hpp"
#include "core/redis/scripts.hpp"
#include "gateway/server/gateway_state.hpp"
#include "gateway/session/hello_resume.hpp"
#include "gateway/session/op_handlers.hpp"
#include "gateway/session/session_handle.hpp"
#include "gateway/session/session_transport.hpp"

namespace pushonce::gateway {

namespace asio = boost::asio;

namespace {

constexpr std::uint16_t close_policy = 1008;  // websocket::close_code::policy_error
constexpr std::uint16_t close_try_again = 1013;

long long session_now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string random_hex(std::size_t n) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char hex[] = "0123456789abcdef";
  std::string s(n, '0');
  for (auto& c : s) c = hex[rng() % 16];
  return s;
}

// One presence script call, not awaited by the session: calls are sent in the order they
// are spawned (one executor), so a session's close follows its open.
void spawn_presence_call(const std::shared_ptr<redis::connection>& conn, const char* script,
                         redis::command cmd, std::string user, asio::any_io_executor ex) {
  asio::co_spawn(
      ex,
      [conn, script, cmd = std::move(cmd),
       user = std::move(user)]() mutable -> asio::awaitable<void> {
        std::vector<redis::command> one;
        one.push_back(std::move(cmd));
        auto rs = co_await redis::eval_all(*conn, redis::get_script(script), std::move(one));
        if (!rs.empty() && !rs[0].ok())
          log::warn("presence: {} for {} failed: {}", script, user,
                    rs[0].ec ? rs[0].ec.message() : rs[0].value.str);
      },
      asio::detached);
}

}  // namespace

session_flow::session_flow(gateway_state& st, session_transport& io)
    : st_(st), io_(io), limiter_(st.settings.frame_rates) {}

bool session_flow::within_rate(const frame_decision& d, session_transport& out) {
  using action = frame_decision::action;
  if (d.what != action::error && d.what != action::dispatch) return true;
  bool queue_op = d.what == action::dispatch &&
                  (std::holds_alternative<join_op>(d.op) || std::holds_alternative<leave_op>(d.op));
  switch (limiter_.on_frame(queue_op)) {
    case frame_limiter::verdict::pass:
      return true;
    case frame_limiter::verdict::rate_limited: {
      ++st_.metrics.rate_limited_frames;
      std::string op = d.what == action::dispatch ? std::string(op_name(d.op)) : d.error.op;
      out.send_text(render_error(
          errc::rate_limited,
          queue_op ? "too many joins and leaves; slow down" : "too many frames; slow down", op));
      return false;
    }
    case frame_limiter::verdict::close:
      ++st_.metrics.rate_limit_closes;
      log::info("ws: {}: over the frame rate limit: closed 1008", user_);
      io_.close(close_policy, "rate limit exceeded");
      return false;
  }
  return false;
}

asio::awaitable<void> session_flow::on_frame(std::string text, bool is_text) {
  co_await on_frame(std::move(text), is_text, io_);
}

asio::awaitable<void> session_flow::on_frame(std::string text, bool is_text,
                                             session_transport& out) {
  auto d = machine_.on_frame(text, is_text);
  if (!within_rate(d, out)) co_return;
  using action = frame_decision::action;
  switch (d.what) {
    case action::ignore:
      break;
    case action::close_policy:
      if (!d.error.message.empty())
        out.send_text(render_error(d.error.code, d.error.message, d.error.op));
      io_.close(close_policy, d.message);
      break;
    case action::error:
      out.send_text(render_error(d.error.code, d.error.message, d.error.op));
      break;
    case action::hello: {
      hello_op h = std::get<hello_op>(std::move(d.op));
      co_await on_hello(std::move(h));
    } break;
    case action::dispatch: {
      op_context ctx{st_, out, user_, epoch_, this};
      co_await handle_op(ctx, std::move(d.op));
    } break;
  }
}

asio::awaitable<void> session_flow::on_hello(hello_op h) {
  auto who = st_.auth->authenticate(h);
  if (!who) {
    ++st_.metrics.auth_failures;
    io_.close(close_policy, who.error().message);
    co_return;
  }
  if (st_.revoked(who.value())) {
    ++st_.metrics.auth_failures;
    io_.close(close_policy, "revoked");
    co_return;
  }
  user_ = who.value().user;
  iat_ = who.value().iat;
  expiry_ = token_expiry(who.value().exp, st_.settings.jwt.leeway);
  arm_expiry();
  auto slot = st_.sessions_per_user->acquire(user_);
  if (!slot.held) {
    ++st_.metrics.sessions_refused;
    log::info("ws: {}: over --max-sessions-per-user ({}): closed 1008", user_,
              st_.settings.max_sessions_per_user);
    io_.close(close_policy, "too many sessions for this user");
    co_return;
  }
  user_slot_ = std::move(slot.held);
  session_id_ = random_hex(16);
  // named locals (GCC 12: docs/architecture.md "Coroutines and GCC 12")
  std::string user = user_, new_epoch = random_hex(16);
  hello_resume decide(std::move(h.since));
  auto checked = decide.session_args();  // session.lua rotates the epoch when it went back
  auto opened =
      co_await st_.inboxes->open(std::move(user), std::move(new_epoch), std::move(checked));
  if (machine_.closing()) co_return;
  if (!opened) {
    log::warn("ws: {}: session.lua failed: {}", user_, opened.error().message);
    io_.close(close_try_again, "redis unavailable");
    co_return;
  }
  const auto& plan = decide.on_opened(opened.value().epoch, opened.value().latest,
                                      opened.value().acked, opened.value().rotated);
  if (decide.rotated()) {
    ++st_.metrics.epoch_rotations;
    log::info("ws: {}: since offset {} is beyond the offset counter {} (failover): new epoch",
              user_, decide.since() ? decide.since()->offset : 0, decide.latest());
  }
  epoch_ = std::move(opened.value().epoch);
  const long long latest = decide.latest();

  // (1) Route the channel first: from here on live frames are buffered.
  resume_.begin(plan.start);
  machine_.on_routed();
  user = user_;
  std::shared_ptr<session_handle> self = io_.self();
  auto routed = co_await st_.registry.add_route(std::move(self), std::move(user));
  if (machine_.closing()) co_return;
  // A revocation heard between the check above and the route: its close missed this session.
  if (st_.revoked(identity{user_, std::nullopt, iat_})) {
    io_.close(close_policy, "revoked");
    co_return;
  }
  if (!routed) {
    log::warn("ws: {}: subscribe failed: {}", user_, routed.error().message);
    io_.close(close_try_again, "redis unavailable");
    co_return;
  }
  // (2) Read what the inbox holds after the start.
  auto page = co_await st_.inboxes->read_page(user_, plan.start);
  if (machine_.closing()) co_return;
  if (!page) {
    log::warn(log::fields{{"user", user_}, {"offset", static_cast<long long>(plan.start)}},
              "ws: {}: inbox read failed: {}", user_, page.error().message);
    io_.close(close_try_again, "redis unavailable");
    co_return;
  }
  std::optional<long long> first;
  if (!page->empty()) first = page->front().offset;
  const auto welcome = decide.on_first_page(first);
  const bool recovered = welcome.recovered;
  resume_.skip_to(welcome.skip_to);  // the welcome owns up to what is gone
  // Proof of work: the welcome carries a challenge for the default queue when it asks one
  // (a join to another queue is answered with its own).
  std::optional<pow_challenge> challenge;
  if (st_.pow) {
    std::string q(default_queue);
    int bits = co_await st_.pow->bits(std::move(q));
    std::shared_ptr<const pow_gate> gate;
    if (bits > 0) gate = co_await st_.pow->gate();
    if (machine_.closing()) co_return;
    if (gate) challenge = join_pow::issue(*gate, user_, std::string(default_queue), bits);
  }
  io_.on_welcome(session_id_, epoch_);
  io_.send_text(render_welcome(user_, session_id_, epoch_, latest, recovered,
                               challenge ? &*challenge : nullptr));
  ++st_.metrics.sessions_opened;
  presence_open();
  if (log::current_level() <= log::level::debug)
    log::debug(log::fields{{"user", user_},
                           {"session", session_id_},
                           {"epoch", epoch_},
                           {"offset", static_cast<long long>(plan.start)}},
               "ws: {} session {} epoch {} start {} recovered {}", user_, session_id_, epoch_,
               plan.start, recovered);
  // (3) Replay, then the buffered live frames, then any catch-up requested meanwhile.
  const bool read = co_await replay(std::move(page.value()));
  if (machine_.closing()) co_return;
  if (!read) {
    on_catch_up_failed("the inbox read failed");
    co_return;
  }
  flush_buffered();
  while (machine_.finish_catch_up()) co_await catch_up_passes();
}

asio::awaitable<bool> session_flow::replay(inbox_page page) {
  for (;;) {
    for (auto& e : page) {
      co_await io_.wait_room();
      if (machine_.closing()) co_return false;
      if (resume_.on_replay(e.offset, frame_id(e.frame)))
        io_.send(std::make_shared<const std::string>(std::move(e.frame)));
      else if (resume_.lost())
        co_return true;  // flush_buffered() closes the session
    }
    if (page.size() < st_.inboxes->page_size()) co_return true;
    auto after = page.back().offset;
    auto next = co_await st_.inboxes->read_page(user_, after);
    if (!next) {
      log::warn(log::fields{{"user", user_}, {"offset", static_cast<long long>(after)}},
                "ws: {}: inbox read failed: {}", user_, next.error().message);
      co_return false;
    }
    page = std::move(next.value());
  }
}

// One catch-up pass; the caller loops while session_machine::finish_catch_up() asks.
asio::awaitable<void> session_flow::catch_up_passes() {
  resume_.begin_catch_up();
  // After a reconnect (or a gap) the user's slot may have failed over: is the offset counter
  // still at or beyond what this session sent, in the same epoch?
  auto pos = co_await st_.inboxes->position(user_);
  if (machine_.closing()) co_return;
  if (!pos)  // the inbox read below fails too, or the check waits for the next pass
    log::warn("ws: {}: reading the offset counter failed: {}", user_, pos.error().message);
  else if (offsets_went_back(epoch_, resume_.last_sent(), pos->epoch, pos->latest)) {
    on_offsets_went_back("the offset counter went back");
    co_return;
  }
  auto page = co_await st_.inboxes->read_page(user_, resume_.last_sent());
  if (machine_.closing()) co_return;
  bool read = false;
  if (page)
    read = co_await replay(std::move(page.value()));
  else
    log::warn(log::fields{{"user", user_}, {"offset", static_cast<long long>(resume_.last_sent())}},
              "ws: {}: inbox read failed: {}", user_, page.error().message);
  if (machine_.closing()) co_return;
  if (!read) {
    on_catch_up_failed("the inbox read failed");
    co_return;
  }
  flush_buffered();
}

void session_flow::flush_buffered() {
  for (auto& f : resume_.finish_catch_up()) io_.send(f);
  if (resume_.regressed()) {
    on_offsets_went_back("an offset came again with another id");
  } else if (resume_.lost()) {
    on_catch_up_failed("offsets after it are no longer in the inbox");
  } else if (resume_.catching_up()) {
    machine_.request_catch_up();  // a hole a frame heard after the read began: one more pass
  }
}

// The session cannot send the next offset (trimmed away, or the inbox unreadable): it ends
// with 1013 rather than skip; the client resumes and its welcome tells what was lost.
void session_flow::on_catch_up_failed(const char* why) {
  if (machine_.closing()) return;
  ++st_.metrics.catch_up_gap_closes;
  log::warn(log::fields{{"user", user_}, {"epoch", epoch_}},
            "ws: {}: cannot send the offset after {} ({}): closing 1013", user_,
            resume_.last_sent(), why);
  io_.close(close_try_again, "missed messages; resume again");
}

void session_flow::on_offsets_went_back(const char* why) {
  if (went_back_ || machine_.closing()) return;
  went_back_ = true;
  ++st_.metrics.offset_regression_closes;
  log::warn(log::fields{{"user", user_}, {"epoch", epoch_}},
            "ws: {}: offsets went back after {} ({}): new epoch, closing 1013", user_,
            resume_.last_sent(), why);
  asio::co_spawn(
      io_.executor(),
      [self = io_.self(), this]() -> asio::awaitable<void> {
        std::string user = user_, new_epoch = random_hex(16);
        std::optional<lua::session_since> since =
            lua::session_since{epoch_, resume_.last_sent(), true};
        auto r =
            co_await st_.inboxes->open(std::move(user), std::move(new_epoch), std::move(since));
        if (!r) log::warn("ws: {}: epoch rotation failed: {}", user_, r.error().message);
        io_.close(close_try_again, "offsets went back; resume again");
      },
      exit_on_exception("session epoch rotation"));
}

void session_flow::request_catch_up() {
  if (!machine_.request_catch_up()) return;
  asio::co_spawn(
      io_.executor(),
      [self = io_.self(), this]() -> asio::awaitable<void> {
        do {
          co_await catch_up_passes();
        } while (machine_.finish_catch_up());
      },
      exit_on_exception("session catch-up"));
}

void session_flow::on_live(const frame_ptr& f) {
  if (!machine_.routed()) return;
  switch (resume_.on_live(f)) {
    case resume_state::live_result::send:
      io_.send(f);
      break;
    case resume_state::live_result::drop:
    case resume_state::live_result::buffered:
      break;
    case resume_state::live_result::gap:
      log::debug("ws: {}: offset gap before {}; catching up", user_, *frame_offset(*f));
      request_catch_up();
      break;
    case resume_state::live_result::overflow:
      io_.close(close_try_again, "too far behind");
      break;
    case resume_state::live_result::regressed:
      on_offsets_went_back("an offset came again with another id");
      break;
  }
}

void session_flow::presence_open() {
  if (st_.presence_instance.empty() || present_) return;
  present_ = true;
  spawn_presence_call(st_.conn, "presence_open",
                      lua::presence_open_command(st_.keys, user_, st_.presence_instance), user_,
                      io_.executor());
}

void session_flow::presence_close() {
  if (!present_) return;
  present_ = false;
  spawn_presence_call(st_.conn, "presence_close",
                      lua::presence_close_command(st_.keys, user_, st_.presence_instance), user_,
                      io_.executor());
}

void session_flow::arm_expiry() {
  auto wait = expiry_.wait(session_now_ms());
  if (!wait) {
    if (expiry_timer_) expiry_timer_->cancel();
    return;
  }
  if (!expiry_timer_) expiry_timer_ = std::make_unique<asio::steady_timer>(io_.executor());
  expiry_timer_->expires_after(*wait);  // cancels a wait armed before
  std::weak_ptr<session_handle> weak = io_.self();
  expiry_timer_->async_wait([weak = std::move(weak), this](std::error_code ec) {
    auto alive = weak.lock();
    if (ec || !alive) return;
    on_expiry_timer();
  });
}

void session_flow::on_expiry_timer() {
  if (machine_.closing()) return;
  if (!expiry_.expired(session_now_ms())) {
    arm_expiry();  // a refresh moved the deadline, or the clocks drifted apart
    return;
  }
  ++st_.metrics.token_expiry_closes;
  log::info(log::fields{{"user", user_}, {"session", session_id_}},
            "ws: {}: token expired without a refresh: closed 1008", user_);
  io_.close(close_policy, "token expired");
}

void session_flow::on_refresh(std::string token, session_transport& out) {
  hello_op h;
  h.token = std::move(token);
  auto who = st_.auth->authenticate(h);
  // A revoked token cannot extend a session either (as at hello).
  if (who && st_.revoked(who.value())) who = failure{errc::auth_failed, "token revoked"};
  auto r = reply_refresh(who, user_, expiry_);
  if (r.accepted) {
    ++st_.metrics.token_refreshes;
    iat_ = who.value().iat;
    arm_expiry();
  } else {
    ++st_.metrics.token_refresh_refusals;
  }
  out.send_text(std::move(r.frame));
}

void session_flow::end(const session_handle* self) {
  machine_.close();
  if (expiry_timer_) expiry_timer_->cancel();
  presence_close();
  st_.positions->unwatch_all(self);
  if (!user_.empty()) st_.registry.remove_route(self, user_);
}

}  // namespace pushonce::gateway
