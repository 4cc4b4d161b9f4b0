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
#include "core/use_tuple.hpp"
#include "gateway/auth/authenticator.hpp"
#include "gateway/auth/key_set.hpp"
#include "gateway/http/gate_routes.hpp"
#include "gateway/server/listener.hpp"
#include "gateway/server/presence_check.hpp"
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

namespace {

// The Redis links, created but not started: commands, probes, and the heartbeat's own.
redis_links build_redis_links(asio::any_io_executor ex, const common_options& common,
                              const std::string& id) {
  redis::connection_options copts;
  copts.where = common.redis;
  copts.cluster = common.redis_cluster;
  copts.sentinel = common.redis_sentinel;
  copts.client_name = "pushonce-gateway:" + id;
  auto hopts = copts;
  hopts.connect_timeout = 1s;
  hopts.command_timeout = 1s;
  auto bopts = hopts;
  bopts.client_name = "pushonce-gateway-heartbeat:" + id;
  return redis_links{redis::connection::create(ex, copts), redis::connection::create(ex, hopts),
                     redis::connection::create(ex, bopts), copts};
}

// The authenticator and, with --jwt-jwks, the key set SIGHUP reads again.
std::pair<std::unique_ptr<authenticator>, std::shared_ptr<key_source>> build_gateway_auth(
    const gateway_settings& set, const std::string& jwks_path) {
  auto secret = jwt::secret_from_env();
  std::shared_ptr<key_source> keys;
  if (!jwks_path.empty()) {
    keys = std::make_shared<key_source>(key_set::load(jwks_path));
    log::info("--jwt-jwks: {} keys from {} (read again on SIGHUP)", keys->get()->size(), jwks_path);
  }
  if (secret.empty() && !keys && !set.dev_auth)
    log::warn(
        "PUSHONCE_JWT_SECRET and --jwt-jwks are not set and --dev-auth is off: every hello is "
        "refused");
  // A rotation: tokens signed with the previous secret still verify while it is set.
  auto previous = secret_from_env("PUSHONCE_JWT_SECRET_PREVIOUS").value_or("");
  if (!previous.empty())
    log::info("PUSHONCE_JWT_SECRET_PREVIOUS is set: tokens signed with it are accepted too");
  auto auth = set.dev_auth ? make_dev_authenticator(secret, set.jwt, keys, previous)
                           : make_jwt_authenticator(secret, set.jwt, keys, previous);
  return {std::move(auth), std::move(keys)};
}

void log_gateway_settings(const gateway_settings& set) {
  log::info(
      "limits: {} connections ({} per address), {} sessions per address, {} per user, "
      "{} frames/s per session (burst {}), {} joins+leaves/s (burst {}), /api/publish {} "
      "requests/s per key (burst {}), data {} bytes (0 = no limit)",
      set.max_connections, set.max_connections_per_ip, set.max_sessions_per_ip,
      set.max_sessions_per_user, set.frame_rates.frames_per_s, set.frame_rates.frame_burst,
      set.frame_rates.queue_ops_per_s, set.frame_rates.queue_op_burst, set.publish_rate,
      set.publish_burst, set.max_data_bytes);
  if (set.dev_auth)
    log::warn("--dev-auth: the user field of hello is trusted; for local demos and tests only{}",
              set.allowed_origins.empty()
                  ? " (and any web page may open a session as any user: name the pages with "
                    "--allowed-origin)"
                  : "");
  if (!set.api_key) log::info("PUSHONCE_API_KEY is not set: /api/publish answers 403");
}

// One running gateway in four steps: build (the constructor: state, listener, heartbeat),
// start (links, subscriptions, accept, timers, signals), drain (not ready, then close the
// sessions with a deadline) and stop (heartbeat removed, links stopped, loop stopped).
class gateway_process {
 public:
  gateway_process(const server_options& opts, asio::io_context& ioc)
      : opts_(opts),
        ioc_(ioc),
        control_(asio::make_strand(ioc)),
        keys_(opts.common.ns, opts.common.bus_shards),
        keep_timer_(control_),
        presence_timer_(control_),
        gate_renewal_timer_(control_),
        listen_deadline_(control_),
        signals_(control_, SIGINT, SIGTERM),
        hangups_(control_, SIGHUP) {
    auto ex = ioc.get_executor();
    const auto& id = opts.settings.id;
    auto [auth, key_src] = build_gateway_auth(opts.settings, opts.jwks_path);
    key_src_ = std::move(key_src);
    std::optional<std::string> pow_secret;
    if (const char* v = std::getenv("PUSHONCE_POW_SECRET"); v && *v) pow_secret = v;
    state_ = std::make_shared<gateway_state>(
        ex, gateway_parts{opts.settings, keys_, lua::presence_instance(id, presence_boot_id()),
                          build_redis_links(ex, opts.common, id), std::move(auth),
                          std::move(pow_secret)});
    auto address = asio::ip::make_address(opts.listen_host);
    listener_ = std::make_shared<listener>(ioc, tcp::endpoint(address, opts.listen_port), state_,
                                           opts.threads > 1);
    heartbeat_ = std::make_unique<heartbeat>(
        state_->heartbeat_conn, keys_, "gateway", id, 1s,
        [registry = &state_->registry, shards = opts.common.bus_shards,
         instance = state_->presence_instance] {
          // `presence`: the leader counts the sessions of any other instance of this id
          // closed (a gateway killed and restarted under the same --id).
          return std::map<std::string, std::string>{{"sessions", std::to_string(registry->size())},
                                                    {"bus_shards", std::to_string(shards)},
                                                    {"presence", instance}};
        });
    heartbeat_->on_conflict(opts.on_layout_conflict);
  }

  void start() {
    auto& st = *state_;
    st.conn->start();
    st.health_conn->start();
    st.heartbeat_conn->start();
    st.sub->start();
    if (st.sharded) st.sharded->start();
    // Hellos are accepted once the first snapshot of the revocations is loaded, so that none
    // is checked against an empty list; a Redis that does not answer within 3 s does not
    // keep the gateway from listening (/healthz, /readyz), and a later snapshot closes the
    // sessions of users it finds revoked (load_revocations).
    asio::co_spawn(
        ioc_.get_executor(),
        [this, sub = st.sub, wake = keys_.wake_channel(), control = lua::control_channel(keys_),
         st = &st]() -> asio::awaitable<void> {
          auto channel = wake;
          co_await sub->subscribe(std::move(channel));
          auto control_channel = control;
          co_await sub->subscribe(std::move(control_channel));
          co_await load_revocations(*st);  // after the subscription: nothing falls between
          asio::post(control_, [this] { listen(); });
        },
        exit_on_exception("gateway wake subscription"));
    listen_deadline_.expires_after(3s);
    listen_deadline_.async_wait([this](std::error_code ec) {
      if (ec) return;
      if (!listening_)
        log::warn(
            "revocations: no snapshot within 3 s (Redis?): listening anyway; a later "
            "snapshot closes the sessions of revoked users");
      listen();
    });
    log_gateway_settings(st.settings);
    asio::co_spawn(control_, heartbeat_->run(), exit_on_exception("gateway heartbeat"));
    asio::co_spawn(control_, keep_inboxes_alive(), exit_on_exception("gateway inbox keep-alive"));
    asio::co_spawn(control_, check_presence(*state_, keys_, presence_timer_),
                   exit_on_exception("gateway presence check"));
    asio::co_spawn(control_, flush_gate_renewals(*state_, gate_renewal_timer_),
                   exit_on_exception("gateway gate renewals"));
    signals_.async_wait([this](std::error_code ec, int sig) { on_signal(ec, sig); });
    hangups_.async_wait([this](std::error_code ec, int) { on_hangup(ec); });
  }

  // Once: the listener starts accepting (on the control strand).
  void listen() {
    if (listening_ || state_->stopping) return;
    listening_ = true;
    listen_deadline_.cancel();
    listener_->run();
    log::info("listening on {}:{} ({} threads), redis {}, namespace {}", opts_.listen_host,
              listener_->local_endpoint().port(), opts_.threads, redis_display(opts_.common),
              keys_.ns());
  }

  int run_threads() {
    std::vector<std::thread> threads;
    for (unsigned i = 1; i < opts_.threads; ++i) threads.emplace_back([this] { ioc_.run(); });
    ioc_.run();
    for (auto& t : threads) t.join();
    return exit_ok;
  }

 private:
  // A user with an open session is not idle: its meta (epoch, offset) and inbox must not
  // expire under the session, or the next delivery would restart offsets at 1 in a new
  // epoch, below what the session has already sent. Refreshed every third of the TTL, for
  // every user held here (one timer per gateway, not per session).
  asio::awaitable<void> keep_inboxes_alive() {
    auto& st = *state_;
    while (!st.stopping) {
      keep_timer_.expires_after(st.inboxes->idle_ttl() / 3);
      auto [ec] = co_await keep_timer_.async_wait(use_tuple);
      if (ec || st.stopping) co_return;
      auto users = st.registry.routed_users();
      co_await st.inboxes->refresh(std::move(users));
    }
  }

  // Turn not-ready (/readyz 503) and keep serving for --drain-delay-ms so a load balancer
  // stops sending new connections, then stop accepting, close every session with 1001 and
  // wait for them (3 s at most).
  asio::awaitable<void> drain() {
    auto& st = *state_;
    st.draining = true;
    auto delay = st.settings.drain_delay;
    if (delay.count() > 0) {
      log::info("draining: /readyz answers 503; closing {} sessions in {} ms", st.registry.size(),
                delay.count());
      asio::steady_timer wait(control_);
      wait.expires_after(delay);
      co_await wait.async_wait(use_tuple);
    }
    log::info("shutting down: closing {} sessions", st.registry.size());
    st.stopping = true;
    heartbeat_->stop();
    keep_timer_.cancel();
    presence_timer_.cancel();
    gate_renewal_timer_.cancel();
    listen_deadline_.cancel();
    listener_->stop();
    st.registry.close_all(1001, "going away");
    asio::steady_timer t(control_);
    auto deadline = std::chrono::steady_clock::now() + 3s;
    while (st.registry.size() > 0 && std::chrono::steady_clock::now() < deadline) {
      t.expires_after(20ms);
      co_await t.async_wait(use_tuple);
    }
  }

  // Remove the heartbeat, stop the Redis links, stop the loop.
  asio::awaitable<void> stop() {
    auto& st = *state_;
    co_await heartbeat_->remove();
    st.sub->stop();
    if (st.sharded) st.sharded->stop();
    st.conn->stop();
    st.health_conn->stop();
    st.heartbeat_conn->stop();
    log::info("stopped");
    ioc_.stop();
  }

  // The first SIGINT/SIGTERM drains and stops; a second one stops the loop at once.
  void on_signal(std::error_code ec, int sig) {
    if (ec) return;
    if (signalled_) {
      log::warn("signal {} again: stopping now", sig);
      ioc_.stop();
      return;
    }
    signalled_ = true;
    asio::co_spawn(
        control_,
        [this]() -> asio::awaitable<void> {
          co_await drain();
          co_await stop();
        },
        exit_on_exception("gateway shutdown"));
    signals_.async_wait([this](std::error_code e, int s) { on_signal(e, s); });
  }

  // SIGHUP: the key set file again (a rotated key); a file that does not parse leaves the
  // keys in force.
  void on_hangup(std::error_code ec) {
    if (ec) return;
    if (key_src_) {
      try {
        key_src_->set(key_set::load(opts_.jwks_path));
        log::info("--jwt-jwks: {} keys from {} (SIGHUP)", key_src_->get()->size(), opts_.jwks_path);
      } catch (const std::exception& e) {
        log::error("--jwt-jwks: {}; keeping the {} keys in force", e.what(),
                   key_src_->get()->size());
      }
    }
    hangups_.async_wait([this](std::error_code e, int) { on_hangup(e); });
  }

  const server_options& opts_;
  asio::io_context& ioc_;
  // The heartbeat, the timers, the signal handlers and the shutdown run on this strand:
  // they share the timers and flags.
  asio::strand<asio::io_context::executor_type> control_;
  pushonce::keys keys_;
  std::shared_ptr<key_source> key_src_;
  std::shared_ptr<gateway_state> state_;
  std::shared_ptr<listener> listener_;
  std::unique_ptr<heartbeat> heartbeat_;
  asio::steady_timer keep_timer_;
  asio::steady_timer presence_timer_;
  asio::steady_timer gate_renewal_timer_;
  asio::steady_timer listen_deadline_;  // the listener starts by then without a snapshot
  bool listening_ = false;
  asio::signal_set signals_;
  asio::signal_set hangups_;
  bool signalled_ = false;
};

}  // namespace

int server::run() {
  auto fd_limit = raise_fd_limit();
  // Room for Redis connections, the listener and the logs: connections past this get 503
  // rather than EMFILE (docs/security.md).
  opts_.settings.max_connections =
      opts_.max_connections ? *opts_.max_connections
                            : static_cast<std::size_t>(fd_limit > 80 ? fd_limit - 64 : 16);
  asio::io_context ioc(static_cast<int>(opts_.threads));
  gateway_process process(opts_, ioc);
  process.start();
  return process.run_threads();
}

}  // namespace pushonce::gateway
