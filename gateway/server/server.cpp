#include "gateway/server/server.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <charconv>
#include <csignal>
#include <cstdlib>
#include <random>
#include <thread>

#include "core/config.hpp"
#include "core/exit_on_exception.hpp"
#include "core/heartbeat.hpp"
#include "core/jwt.hpp"
#include "core/log.hpp"
#include "core/lua/presence.hpp"
#include "core/lua/revoke.hpp"
#include "core/redis/scripts.hpp"
#include "core/use_tuple.hpp"
#include "gateway/auth/key_set.hpp"
#include "gateway/server/listener.hpp"
#include "gateway/server/revocation_sync.hpp"

namespace pushonce::gateway {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;

namespace {

// Every idle WebSocket is a descriptor: the soft limit (often 1024) goes up to the hard one.
// Returns the soft limit in force.
rlim_t raise_fd_limit() {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return 1024;
  auto before = rl.rlim_cur;
  if (rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0) getrlimit(RLIMIT_NOFILE, &rl);
  }
  log::info("open files limit: {} (was {}, hard limit {})", rl.rlim_cur, before, rl.rlim_max);
  return rl.rlim_cur;
}

// A new random word for every process: its presence instance (core/lua/presence.hpp).
std::string presence_boot_id() {
  std::random_device rd;
  static constexpr char hex[] = "0123456789abcdef";
  std::string s;
  for (int i = 0; i < 12; ++i) s.push_back(hex[rd() % 16]);
  return s;
}

}  // namespace

std::pair<std::string, std::uint16_t> parse_listen(std::string_view text) {
  auto bad = [&] {
    return usage_error("--listen: expected HOST:PORT, got '" + std::string(text) + "'");
  };
  auto colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0) throw bad();
  auto host = text.substr(0, colon);
  auto port_text = text.substr(colon + 1);
  if (host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') throw bad();
    host = host.substr(1, host.size() - 2);
  }
  unsigned port = 0;
  auto [p, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc{} || p != port_text.data() + port_text.size() || port > 65535 ||
      port_text.empty())
    throw bad();
  return {std::string(host), static_cast<std::uint16_t>(port)};
}

int server::run() {
  auto fd_limit = raise_fd_limit();
  // Room for Redis connections, the listener and the logs: connections past this get 503
  // rather than EMFILE (docs/security.md).
  opts_.settings.max_connections =
      opts_.max_connections ? *opts_.max_connections
                            : static_cast<std::size_t>(fd_limit > 80 ? fd_limit - 64 : 16);
  asio::io_context ioc(static_cast<int>(opts_.threads));
  auto ex = ioc.get_executor();
  // The heartbeat, the inbox keep-alive, the signal handler and the shutdown run on one
  // strand: they share the timers and flags below.
  auto control = asio::make_strand(ioc);

  pushonce::keys k(opts_.common.ns, opts_.common.bus_shards);
  auto state = std::make_shared<gateway_state>(opts_.settings, k);
  const auto& id = state->settings.id;
  state->presence_instance = lua::presence_instance(id, presence_boot_id());

  redis::connection_options copts;
  copts.where = opts_.common.redis;
  copts.cluster = opts_.common.redis_cluster;
  copts.sentinel = opts_.common.redis_sentinel;
  copts.client_name = "pushonce-gateway:" + id;
  state->conn = redis::connection::create(ex, copts);
  auto hopts = copts;
  hopts.connect_timeout = 1s;
  hopts.command_timeout = 1s;
  state->health_conn = redis::connection::create(ex, hopts);
  auto bopts = hopts;
  bopts.client_name = "pushonce-gateway-heartbeat:" + id;
  state->heartbeat_conn = redis::connection::create(ex, bopts);
  auto* registry = &state->registry;
  state->positions =
      std::make_shared<position_notifier>(ex, state->conn, k, state->settings.position_interval);
  auto positions = state->positions;
  auto wake = k.wake_channel();
  auto control_ch = lua::control_channel(k);
  auto* st_raw = state.get();
  state->sub = redis::subscriber::create(
      ex, copts,
      [registry, positions, wake, control_ch, st_raw](const std::string& ch, std::string payload) {
        if (ch == wake)
          positions->on_wake(std::move(payload));
        else if (ch == control_ch)
          on_control_message(*st_raw, payload);  // revocation_sync.cpp
        else
          registry->on_message(ch, std::move(payload));
      });
  state->sub->on_connect([registry, positions, ex, st_raw] {
    registry->on_subscriber_connect();
    positions->resync_all();  // queue events may have been missed meanwhile
    // Revocations broadcast meanwhile were missed: read them again.
    asio::co_spawn(ex, load_revocations(*st_raw), asio::detached);
  });
  // A channel Redis refused (ACL) and confirmed on a retry: its sessions catch up on what
  // they missed; the wake channel's queue events are re-read.
  state->sub->on_resubscribed([registry, positions, wake](const std::string& ch) {
    if (ch == wake)
      positions->resync_all();
    else
      registry->on_channel_resubscribed(ch);
  });
  registry->set_subscriber(state->sub);
  if (!copts.cluster.empty()) {
    // Redis Cluster: user channels are SPUBLISHed by claim.lua; they are SSUBSCRIBEd on the
    // master of each user's slot. The wake channel stays classic Pub/Sub (above).
    state->sharded = redis::sharded_subscriber::create(
        ex, copts, state->conn, [registry](const std::string& ch, std::string payload) {
          registry->on_message(ch, std::move(payload));
        });
    state->sharded->on_resubscribed(
        [registry](const std::string& ch) { registry->on_channel_resubscribed(ch); });
    registry->set_sharded_subscriber(state->sharded);
  }
  state->queues = std::make_unique<queue_api>(state->conn, k, state->settings.retention);
  state->pub =
      std::make_unique<publisher>(state->conn, k, publisher_options{state->settings.retention});
  state->inboxes =
      std::make_unique<inbox>(state->conn, k, state->settings.idle_ttl, state->settings.inbox_page);
  std::optional<std::string> pow_secret;
  if (const char* v = std::getenv("PUSHONCE_POW_SECRET"); v && *v) pow_secret = v;
  state->pow = std::make_shared<join_pow>(state->conn, k, pow_secret);
  auto secret = jwt::secret_from_env();
  std::shared_ptr<key_source> keys;
  if (!opts_.jwks_path.empty()) {
    keys = std::make_shared<key_source>(key_set::load(opts_.jwks_path));
    log::info("--jwt-jwks: {} keys from {} (read again on SIGHUP)", keys->get()->size(),
              opts_.jwks_path);
  }
  if (secret.empty() && !keys && !state->settings.dev_auth)
    log::warn(
        "PUSHONCE_JWT_SECRET and --jwt-jwks are not set and --dev-auth is off: every hello is "
        "refused");
  // A rotation: tokens signed with the previous secret still verify while it is set.
  auto previous = secret_from_env("PUSHONCE_JWT_SECRET_PREVIOUS").value_or("");
  if (!previous.empty())
    log::info("PUSHONCE_JWT_SECRET_PREVIOUS is set: tokens signed with it are accepted too");
  state->auth = state->settings.dev_auth
                    ? make_dev_authenticator(secret, state->settings.jwt, keys, previous)
                    : make_jwt_authenticator(secret, state->settings.jwt, keys, previous);

  auto address = asio::ip::make_address(opts_.listen_host);
  auto lst = std::make_shared<listener>(ioc, tcp::endpoint(address, opts_.listen_port), state,
                                        opts_.threads > 1);

  state->conn->start();
  state->health_conn->start();
  state->heartbeat_conn->start();
  state->sub->start();
  if (state->sharded) state->sharded->start();
  asio::co_spawn(
      ex,
      [sub = state->sub, wake, control_ch, st_raw]() -> asio::awaitable<void> {
        auto channel = wake;
        co_await sub->subscribe(std::move(channel));
        auto control = control_ch;
        co_await sub->subscribe(std::move(control));
        co_await load_revocations(*st_raw);  // after the subscription: nothing falls between
      },
      exit_on_exception("gateway wake subscription"));
  lst->run();
  log::info("listening on {}:{} ({} threads), redis {}, namespace {}", opts_.listen_host,
            lst->local_endpoint().port(), opts_.threads, redis_display(opts_.common), k.ns());
  const auto& set = state->settings;
  log::info(
      "limits: {} connections ({} per address), {} sessions per address, {} per user, "
      "{} frames/s per session (burst {}), {} joins+leaves/s (burst {}), /api/publish {} "
      "requests/s per key (burst {}), data {} bytes (0 = no limit)",
      set.max_connections, set.max_connections_per_ip, set.max_sessions_per_ip,
      set.max_sessions_per_user, set.frame_rates.frames_per_s, set.frame_rates.frame_burst,
      set.frame_rates.queue_ops_per_s, set.frame_rates.queue_op_burst, set.publish_rate,
      set.publish_burst, set.max_data_bytes);
  if (state->settings.dev_auth)
    log::warn("--dev-auth: the user field of hello is trusted; for local demos and tests only{}",
              state->settings.allowed_origins.empty()
                  ? " (and any web page may open a session as any user: name the pages with "
                    "--allowed-origin)"
                  : "");
  if (!state->settings.api_key) log::info("PUSHONCE_API_KEY is not set: /api/publish answers 403");

  heartbeat hb(state->heartbeat_conn, k, "gateway", id, 1s,
               [registry, shards = opts_.common.bus_shards, instance = state->presence_instance] {
                 // `presence`: the leader counts the sessions of any other instance of this id
                 // closed (a gateway killed and restarted under the same --id).
                 return std::map<std::string, std::string>{
                     {"sessions", std::to_string(registry->size())},
                     {"bus_shards", std::to_string(shards)},
                     {"presence", instance}};
               });
  hb.on_conflict(opts_.on_layout_conflict);
  asio::co_spawn(control, hb.run(), exit_on_exception("gateway heartbeat"));

  // A user with an open session is not idle: its meta (epoch, offset) and inbox must not
  // expire under the session, or the next delivery would restart offsets at 1 in a new
  // epoch, below what the session has already sent. Refreshed every third of the TTL, for
  // every user held here (one timer per gateway, not per session).
  asio::steady_timer keep_timer(control);
  asio::co_spawn(
      control,
      [&]() -> asio::awaitable<void> {
        while (!state->stopping) {
          keep_timer.expires_after(state->inboxes->idle_ttl() / 3);
          auto [ec] = co_await keep_timer.async_wait(use_tuple);
          if (ec || state->stopping) co_return;
          auto users = registry->routed_users();
          co_await state->inboxes->refresh(std::move(users));
        }
      },
      exit_on_exception("gateway inbox keep-alive"));

  // Presence (docs/data-model.md): when the leader counted this instance's sessions closed
  // (its heartbeat lapsed while the process lived on: a pause, a slow link), it is gone from
  // NS:{presence}:gws; count the sessions held here again. One ZSCORE every 5 s.
  asio::steady_timer presence_timer(control);
  asio::co_spawn(
      control,
      [&]() -> asio::awaitable<void> {
        const auto gws = lua::presence_key(k, "gws");
        while (!state->stopping) {
          presence_timer.expires_after(5s);
          auto [ec] = co_await presence_timer.async_wait(use_tuple);
          if (ec || state->stopping) co_return;
          redis::command ask{"ZSCORE", gws, state->presence_instance};
          auto r = co_await state->conn->exec(std::move(ask));
          if (!r.ok() || !r.value.is_nil()) continue;
          auto held = registry->routed_user_sessions();
          if (held.empty()) continue;
          log::warn(
              "presence: this gateway's sessions were counted closed (its heartbeat "
              "lapsed): counting {} users again",
              held.size());
          for (std::size_t from = 0; from < held.size(); from += 1000) {
            std::vector<std::pair<std::string, std::size_t>> part(
                held.begin() + static_cast<std::ptrdiff_t>(from),
                held.begin() + static_cast<std::ptrdiff_t>(std::min(held.size(), from + 1000)));
            std::vector<redis::command> call;
            call.push_back(lua::presence_reclaim_command(k, state->presence_instance, part));
            co_await redis::eval_all(*state->conn, redis::get_script("presence_reclaim"),
                                     std::move(call));
          }
        }
      },
      exit_on_exception("gateway presence check"));

  // Shutdown: turn not-ready (/readyz 503) and keep serving for --drain-delay-ms so a load
  // balancer stops sending new connections, then stop accepting, close every session with
  // 1001, drain (3 s at most), remove the heartbeat, stop Redis, stop the loop.
  auto shutdown = [&]() -> asio::awaitable<void> {
    state->draining = true;
    auto delay = state->settings.drain_delay;
    if (delay.count() > 0) {
      log::info("draining: /readyz answers 503; closing {} sessions in {} ms", registry->size(),
                delay.count());
      asio::steady_timer wait(control);
      wait.expires_after(delay);
      co_await wait.async_wait(use_tuple);
    }
    log::info("shutting down: closing {} sessions", registry->size());
    state->stopping = true;
    hb.stop();
    keep_timer.cancel();
    presence_timer.cancel();
    lst->stop();
    registry->close_all(1001, "going away");
    asio::steady_timer t(control);
    auto deadline = std::chrono::steady_clock::now() + 3s;
    while (registry->size() > 0 && std::chrono::steady_clock::now() < deadline) {
      t.expires_after(20ms);
      co_await t.async_wait(use_tuple);
    }
    co_await hb.remove();
    state->sub->stop();
    if (state->sharded) state->sharded->stop();
    state->conn->stop();
    state->health_conn->stop();
    state->heartbeat_conn->stop();
    log::info("stopped");
    ioc.stop();
  };

  asio::signal_set signals(control, SIGINT, SIGTERM);
  bool signalled = false;
  std::function<void(std::error_code, int)> on_signal = [&](std::error_code ec, int sig) {
    if (ec) return;
    if (signalled) {
      log::warn("signal {} again: stopping now", sig);
      ioc.stop();
      return;
    }
    signalled = true;
    asio::co_spawn(control, shutdown, exit_on_exception("gateway shutdown"));
    signals.async_wait(on_signal);
  };
  signals.async_wait(on_signal);

  // SIGHUP: the key set file again (a rotated key); a file that does not parse leaves the
  // keys in force.
  asio::signal_set hangups(control, SIGHUP);
  std::function<void(std::error_code, int)> on_hangup = [&](std::error_code ec, int) {
    if (ec) return;
    if (keys) {
      try {
        keys->set(key_set::load(opts_.jwks_path));
        log::info("--jwt-jwks: {} keys from {} (SIGHUP)", keys->get()->size(), opts_.jwks_path);
      } catch (const std::exception& e) {
        log::error("--jwt-jwks: {}; keeping the {} keys in force", e.what(), keys->get()->size());
      }
    }
    hangups.async_wait(on_hangup);
  };
  hangups.async_wait(on_hangup);

  std::vector<std::thread> threads;
  for (unsigned i = 1; i < opts_.threads; ++i) threads.emplace_back([&ioc] { ioc.run(); });
  ioc.run();
  for (auto& t : threads) t.join();
  return exit_ok;
}

}  // namespace pushonce::gateway
