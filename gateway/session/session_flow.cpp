#include "gateway/session/session_flow.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>

#include "core/exit_on_exception.hpp"
#include "core/log.hpp"
#include "core/lua/presence.hpp"
#include "core/random_hex.hpp"
#include "gateway/auth/authenticator.hpp"
#include "gateway/protocol/session_handle.hpp"
#include "gateway/queue/join_pow.hpp"
#include "gateway/queue/position_notifier.hpp"
#include "gateway/session/op_handlers.hpp"
#include "gateway/session/session_transport.hpp"
#include "gateway/state/gateway_state.hpp"

namespace pushonce::gateway {

namespace asio = boost::asio;

session_flow::session_flow(session_services sv, session_transport& io, std::string_view log_name)
    : sv_(std::move(sv)), io_(io), log_name_(log_name), limiter_(sv_.settings.frame_rates) {}

bool session_flow::within_rate(const frame_decision& d, session_transport& out) {
  using action = frame_decision::action;
  if (d.what != action::error && d.what != action::dispatch) return true;
  bool queue_op = d.what == action::dispatch &&
                  (std::holds_alternative<join_op>(d.op) || std::holds_alternative<leave_op>(d.op));
  switch (limiter_.on_frame(queue_op)) {
    case frame_limiter::verdict::pass:
      return true;
    case frame_limiter::verdict::rate_limited: {
      ++sv_.metrics.rate_limited_frames;
      std::string op = d.what == action::dispatch ? std::string(op_name(d.op)) : d.error.op;
      out.send_text(render_error(
          errc::rate_limited,
          queue_op ? "too many joins and leaves; slow down" : "too many frames; slow down", op));
      return false;
    }
    case frame_limiter::verdict::close:
      ++sv_.metrics.rate_limit_closes;
      log::info("{}: {}: over the frame rate limit: closed 1008", log_name_, user_);
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
      // refresh moves this session's token deadline: answered here, not by op_handlers.
      if (auto* r = std::get_if<refresh_op>(&d.op)) {
        on_refresh(std::move(r->token), out);
        break;
      }
      op_context ctx{sv_, out, user_, epoch_, log_name_};
      co_await handle_op(ctx, std::move(d.op));
    } break;
  }
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
    if (page.size() < sv_.inboxes->page_size()) co_return true;
    auto after = page.back().offset;
    auto next = co_await sv_.inboxes->read_page(user_, after);
    if (!next) {
      log::warn(log::fields{{"user", user_}, {"offset", static_cast<long long>(after)}},
                "{}: {}: inbox read failed: {}", log_name_, user_, next.error().message);
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
  auto pos = co_await sv_.inboxes->position(user_);
  if (machine_.closing()) co_return;
  if (!pos)  // the inbox read below fails too, or the check waits for the next pass
    log::warn("{}: {}: reading the offset counter failed: {}", log_name_, user_,
              pos.error().message);
  else if (offsets_went_back(epoch_, resume_.last_sent(), pos->epoch, pos->latest)) {
    on_offsets_went_back("the offset counter went back");
    co_return;
  }
  auto page = co_await sv_.inboxes->read_page(user_, resume_.last_sent());
  if (machine_.closing()) co_return;
  bool read = false;
  if (page)
    read = co_await replay(std::move(page.value()));
  else
    log::warn(log::fields{{"user", user_}, {"offset", static_cast<long long>(resume_.last_sent())}},
              "{}: {}: inbox read failed: {}", log_name_, user_, page.error().message);
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
  ++sv_.metrics.catch_up_gap_closes;
  log::warn(log::fields{{"user", user_}, {"epoch", epoch_}},
            "{}: {}: cannot send the offset after {} ({}): closing 1013", log_name_, user_,
            resume_.last_sent(), why);
  io_.close(close_try_again, "missed messages; resume again");
}

void session_flow::on_offsets_went_back(const char* why) {
  if (went_back_ || machine_.closing()) return;
  went_back_ = true;
  ++sv_.metrics.offset_regression_closes;
  log::warn(log::fields{{"user", user_}, {"epoch", epoch_}},
            "{}: {}: offsets went back after {} ({}): new epoch, closing 1013", log_name_, user_,
            resume_.last_sent(), why);
  asio::co_spawn(
      io_.executor(),
      [self = io_.self(), this]() -> asio::awaitable<void> {
        std::string user = user_, new_epoch = random_hex(16);
        std::optional<lua::session_since> since =
            lua::session_since{epoch_, resume_.last_sent(), true};
        auto r =
            co_await sv_.inboxes->open(std::move(user), std::move(new_epoch), std::move(since));
        if (!r) log::warn("{}: {}: epoch rotation failed: {}", log_name_, user_, r.error().message);
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
      log::debug("{}: {}: offset gap before {}; catching up", log_name_, user_, *frame_offset(*f));
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
  presence_.open(io_.executor(),
                 session_presence::calls{sv_.conn, sv_.presence, sv_.keys, sv_.presence_instance},
                 user_);
}

void session_flow::presence_close() {
  presence_.close(io_.executor());
}

void session_flow::end(const session_handle* self) {
  machine_.close();
  if (expiry_timer_) expiry_timer_->cancel();
  presence_close();
  sv_.positions->unwatch_all(self);
  if (!user_.empty()) sv_.registry.remove_route(self, user_);
}

}  // namespace pushonce::gateway
