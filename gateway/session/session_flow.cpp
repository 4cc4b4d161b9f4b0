#include "gateway/session/session_flow.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <random>

#include "core/exit_on_exception.hpp"
#include "core/log.hpp"
#include "core/lua/presence.hpp"
#include "core/redis/scripts.hpp"
#include "gateway/auth/authenticator.hpp"
#include "gateway/protocol/session_handle.hpp"
#include "gateway/queue/join_pow.hpp"
#include "gateway/queue/position_notifier.hpp"
#include "gateway/session/hello_machine.hpp"
#include "gateway/session/op_handlers.hpp"
#include "gateway/session/session_transport.hpp"
#include "gateway/state/gateway_state.hpp"

namespace pushonce::gateway {

namespace asio = boost::asio;

namespace {

std::string random_hex(std::size_t n) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char hex[] = "0123456789abcdef";
  std::string s(n, '0');
  for (auto& c : s) c = hex[rng() % 16];
  return s;
}

}  // namespace

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

asio::awaitable<void> session_flow::on_hello(hello_op h) {
  // The thin shell of hello_machine: carry out each action, hand its result back as the next
  // event, until a close or done.
  using kind = hello_event::kind;
  const auto event_of = [](kind k) {
    hello_event e;
    e.what = k;
    return e;
  };
  const auto failed = [&](std::string message) {
    hello_event e = event_of(kind::failed);
    e.message = std::move(message);
    return e;
  };
  hello_machine hm(h.since, sv_.pow != nullptr);
  hello_event ev = event_of(kind::start);
  std::optional<identity> who;
  std::string opened_epoch;
  inbox_page first_page;
  std::optional<pow_challenge> challenge;
  for (;;) {
    const hello_action act = hm.resume(ev);
    switch (act.what) {
      case hello_step::verify_token: {
        auto r = sv_.auth->authenticate(h);
        if (!r) {
          ev = failed(r.error().message);
          break;
        }
        who = std::move(r.value());
        ev = event_of(kind::ok);
      } break;
      case hello_step::check_revoked:
        ev = event_of(sv_.revoked(*who) ? kind::revoked : kind::not_revoked);
        break;
      case hello_step::take_slot: {
        user_ = who->user;
        iat_ = who->iat;
        expiry_ = token_expiry(who->exp, sv_.settings.jwt.leeway);
        arm_expiry();
        auto slot = sv_.sessions_per_user->acquire(user_);
        if (!slot.held) {
          ev = event_of(kind::failed);
          break;
        }
        user_slot_ = std::move(slot.held);
        session_id_ = random_hex(16);
        ev = event_of(kind::ok);
      } break;
      case hello_step::open_session: {
        // named locals (GCC 12: docs/architecture.md "Coroutines and GCC 12")
        std::string user = user_, new_epoch = random_hex(16);
        // session.lua rotates the epoch when it went back
        auto checked = hm.decide().session_args();
        auto opened =
            co_await sv_.inboxes->open(std::move(user), std::move(new_epoch), std::move(checked));
        if (machine_.closing()) {
          ev = event_of(kind::closing);
        } else if (!opened) {
          ev = failed(opened.error().message);
        } else {
          ev = event_of(kind::opened);
          ev.epoch = opened.value().epoch;
          ev.latest = opened.value().latest;
          ev.acked = opened.value().acked;
          ev.rotated = opened.value().rotated;
          opened_epoch = std::move(opened.value().epoch);
        }
      } break;
      case hello_step::route: {
        const auto& decide = hm.decide();
        if (decide.rotated()) {
          ++sv_.metrics.epoch_rotations;
          log::info("{}: {}: since offset {} is beyond the offset counter {} (failover): new epoch",
                    log_name_, user_, decide.since() ? decide.since()->offset : 0, decide.latest());
        }
        epoch_ = std::move(opened_epoch);
        // (1) Route the channel first: from here on live frames are buffered.
        resume_.begin(hm.start());
        machine_.on_routed();
        std::string user = user_;
        std::shared_ptr<session_handle> self = io_.self();
        auto routed = co_await sv_.registry.add_route(std::move(self), std::move(user));
        if (machine_.closing())
          ev = event_of(kind::closing);
        else if (!routed)
          ev = failed(routed.error().message);  // looked at after the revocation check
        else
          ev = event_of(kind::ok);
      } break;
      case hello_step::check_revoked_again:
        // A revocation heard between the check above and the route: its close missed this
        // session.
        ev = event_of(sv_.revoked(identity{user_, std::nullopt, iat_}) ? kind::revoked
                                                                       : kind::not_revoked);
        break;
      case hello_step::read_first_page: {
        // (2) Read what the inbox holds after the start.
        auto page = co_await sv_.inboxes->read_page(user_, hm.start());
        if (machine_.closing()) {
          ev = event_of(kind::closing);
        } else if (!page) {
          ev = failed(page.error().message);
        } else {
          ev = event_of(kind::page);
          if (!page->empty()) ev.first = page->front().offset;
          first_page = std::move(page.value());
        }
      } break;
      case hello_step::skip_lost:
        resume_.skip_to(hm.welcome().skip_to);  // the welcome owns up to what is gone
        ev = event_of(kind::ok);
        break;
      case hello_step::issue_challenge: {
        // Proof of work: the welcome carries a challenge for the default queue when it asks
        // one (a join to another queue is answered with its own).
        std::string q(default_queue);
        int bits = co_await sv_.pow->bits(std::move(q));
        std::shared_ptr<const pow_gate> gate;
        if (bits > 0) gate = co_await sv_.pow->gate();
        if (machine_.closing()) {
          ev = event_of(kind::closing);
          break;
        }
        if (gate) challenge = join_pow::issue(*gate, user_, std::string(default_queue), bits);
        ev = event_of(kind::ok);
      } break;
      case hello_step::send_welcome: {
        const bool recovered = hm.welcome().recovered;
        io_.on_welcome(session_id_, epoch_);
        io_.send_text(render_welcome(user_, session_id_, epoch_, hm.decide().latest(), recovered,
                                     challenge ? &*challenge : nullptr));
        ++sv_.metrics.sessions_opened;
        presence_open();
        if (log::current_level() <= log::level::debug)
          log::debug(log::fields{{"user", user_},
                                 {"session", session_id_},
                                 {"epoch", epoch_},
                                 {"offset", static_cast<long long>(hm.start())}},
                     "{}: {} session {} epoch {} start {} recovered {}", log_name_, user_,
                     session_id_, epoch_, hm.start(), recovered);
        ev = event_of(kind::ok);
      } break;
      case hello_step::close:
        switch (act.why) {
          case close_why::auth_failed:
          case close_why::revoked:
            ++sv_.metrics.auth_failures;
            break;
          case close_why::too_many_sessions:
            ++sv_.metrics.sessions_refused;
            log::info("{}: {}: over --max-sessions-per-user ({}): closed 1008", log_name_, user_,
                      sv_.settings.max_sessions_per_user);
            break;
          case close_why::session_lua_failed:
            log::warn("{}: {}: session.lua failed: {}", log_name_, user_, act.detail);
            break;
          case close_why::subscribe_failed:
            log::warn("{}: {}: subscribe failed: {}", log_name_, user_, act.detail);
            break;
          case close_why::inbox_read_failed:
            log::warn(log::fields{{"user", user_}, {"offset", static_cast<long long>(hm.start())}},
                      "{}: {}: inbox read failed: {}", log_name_, user_, act.detail);
            break;
          case close_why::revoked_after_route:
          case close_why::none:
            break;
        }
        io_.close(act.code, act.reason);
        co_return;
      case hello_step::done:
        if (!hm.welcomed()) co_return;  // the session closed meanwhile
        break;
    }
    if (act.what == hello_step::done) break;
  }

  // (3) Replay, then the buffered live frames, then any catch-up requested meanwhile.
  const bool read = co_await replay(std::move(first_page));
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
