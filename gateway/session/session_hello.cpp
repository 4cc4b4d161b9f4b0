#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>

#include "core/exit_on_exception.hpp"
#include "core/log.hpp"
#include "core/random_hex.hpp"
#include "gateway/auth/authenticator.hpp"
#include "gateway/protocol/session_handle.hpp"
#include "gateway/queue/join_pow.hpp"
#include "gateway/queue/position_notifier.hpp"
#include "gateway/session/hello_machine.hpp"
#include "gateway/session/op_handlers.hpp"
#include "gateway/session/session_flow.hpp"
#include "gateway/session/session_transport.hpp"
#include "gateway/state/gateway_state.hpp"

// session_flow's hello (docs/protocol.md "hello" and "Resume"): the thin shell that carries
// out hello_machine's actions (authentication, revocation, the per-user slot, session.lua,
// routing, the first inbox page, the welcome) and hands each result back as its next event.

namespace pushonce::gateway {

namespace asio = boost::asio;

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

}  // namespace pushonce::gateway
