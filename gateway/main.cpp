// pushonce-gateway: WebSocket/HTTP server (docs/protocol.md "pushonce-gateway").
#include <fmt/format.h>

#include <algorithm>
#include <boost/asio/ip/address.hpp>
#include <boost/program_options/options_description.hpp>
#include <boost/program_options/value_semantic.hpp>
#include <cstdlib>
#include <optional>
#include <thread>

#include "core/config.hpp"
#include "core/heartbeat.hpp"
#include "core/jwt.hpp"
#include "core/log.hpp"
#include "core/names.hpp"
#include "core/program.hpp"
#include "gateway/auth/key_set.hpp"
#include "gateway/server/server.hpp"

namespace po = boost::program_options;
using namespace pushonce;

namespace {

// The API key and the admin token: guessing is slowed per address (auth_failures), and a
// secret this short is warned about at start (the contract sets no minimum, so it is served).
constexpr std::size_t min_shared_secret_bytes = 8;

constexpr const char* usage =
    "usage: pushonce-gateway [--listen HOST:PORT] [--dev-auth] [--allowed-origin ORIGIN]...\n"
    "                        [--threads N] [--id NAME] [--trusted-proxy ADDR,...]\n"
    "                        [limits, docs/security.md] [common options]\n"
    "\n"
    "WebSocket and HTTP gateway: GET /ws (WebSocket), GET /healthz, GET /readyz,\n"
    "POST /api/publish\n"
    "(Authorization: Bearer $PUSHONCE_API_KEY). Auth: HS256 JWT signed with\n"
    "PUSHONCE_JWT_SECRET, or --dev-auth (trusts the hello's user; demos and tests only).\n";

po::options_description own_options() {
  po::options_description d("Gateway options");
  // clang-format off
  d.add_options()
      ("listen", po::value<std::string>()->value_name("HOST:PORT"),
       "address to listen on (default 127.0.0.1:8080)")
      ("dev-auth", po::bool_switch(), "trust the user field of hello (no JWT)")
      ("allowed-origin", po::value<std::vector<std::string>>()->value_name("ORIGIN"),
       "an Origin allowed to open /ws (repeatable; default: any)")
      ("inbox-idle-ms", po::value<long long>()->value_name("MS"),
       "a user's inbox expires after this long without use; keep equal to the workers' "
       "--inbox-idle-ms (default 7 days)")
      ("drain-delay-ms", po::value<long long>()->value_name("MS"),
       "on SIGTERM, answer /readyz 503 this long before closing sessions with 1001, so a "
       "load balancer stops sending new connections first (env PUSHONCE_DRAIN_DELAY_MS, "
       "default 0)")
      ("position-interval-ms", po::value<long long>()->value_name("MS"),
       "a waiting session gets at most one position frame per this long, always the "
       "latest position (default 1000)")
      ("approx-after", po::value<long long>()->value_name("N"),
       "beyond this position, position frames carry the position rounded to 3 significant "
       "digits (\"approx\":true), sent when the rounded value changes and at least every 60 s "
       "while it moves; 0: always exact (default 10000)")
      ("presence-check-ms", po::value<long long>()->value_name("MS"),
       "how often the gateway checks that its sessions are still counted present; after a "
       "pause longer than its heartbeat they were counted closed, and are counted again "
       "within this long of resuming (default 5000)")
      ("threads", po::value<unsigned>()->value_name("N"),
       "threads running the event loop (default 1; see docs/benchmarks.md \"Idle connections\")")
      ("id", po::value<std::string>()->value_name("NAME"),
       "this gateway's id in the heartbeat listing (default: host-pid-random)")
      // Limits (docs/security.md); 0 turns a limit off.
      ("max-connections", po::value<long long>()->value_name("N"),
       "TCP connections held at once; more are answered 503 (default: the open-files "
       "limit minus 64)")
      ("max-connections-per-ip", po::value<long long>()->value_name("N"),
       "connections of one client address (default 1000)")
      ("max-sessions-per-ip", po::value<long long>()->value_name("N"),
       "WebSocket sessions of one client address; more upgrades are answered 503 "
       "(default 1000)")
      ("max-sessions-per-user", po::value<long long>()->value_name("N"),
       "sessions of one user on this gateway; more are closed 1008 after hello (default 100)")
      ("http-idle-timeout-ms", po::value<long long>()->value_name("MS"),
       "an HTTP connection waiting this long for a request is closed (default 15000)")
      ("http-header-timeout-ms", po::value<long long>()->value_name("MS"),
       "a request's header must arrive within this long: from accept for the first one, from "
       "its first byte for a later one (default 5000)")
      ("hello-timeout-ms", po::value<long long>()->value_name("MS"),
       "a WebSocket that has sent no hello this long after its upgrade is closed 1008 "
       "(default 10000)")
      ("http-max-requests", po::value<long long>()->value_name("N"),
       "requests on one keep-alive connection, then it is closed (default 1000)")
      ("close-timeout-ms", po::value<long long>()->value_name("MS"),
       "a closing session whose peer does not read is dropped after this (default 5000)")
      ("frame-rate", po::value<long long>()->value_name("N"),
       "client frames per second per session (default 100, burst --frame-burst 200)")
      ("frame-burst", po::value<long long>()->value_name("N"), "see --frame-rate")
      ("queue-op-rate", po::value<long long>()->value_name("N"),
       "joins and leaves per second per session (default 5, burst --queue-op-burst 20)")
      ("queue-op-burst", po::value<long long>()->value_name("N"), "see --queue-op-rate")
      ("rate-limit-strikes", po::value<long long>()->value_name("N"),
       "frames in a row answered rate_limited before the session is closed 1008 (default 20)")
      ("publish-rate", po::value<long long>()->value_name("N"),
       "/api/publish requests per second per API key, counted in Redis across gateways "
       "(default 10000, burst --publish-burst 20000; 0: off)")
      ("publish-burst", po::value<long long>()->value_name("N"), "see --publish-rate")
      ("jwt-jwks", po::value<std::string>()->value_name("FILE"),
       "a JSON Web Key Set (RSA keys for RS256, EC P-256 keys for ES256) that verifies tokens "
       "an identity provider signs; read again on SIGHUP (env PUSHONCE_JWT_JWKS)")
      ("jwt-leeway", po::value<long long>()->value_name("SECONDS"),
       "clock skew allowed on a token's exp, nbf and iat (default 30)")
      ("jwt-audience", po::value<std::string>()->value_name("AUD"),
       "a token's aud must hold AUD (default: aud is not checked)")
      ("jwt-issuer", po::value<std::string>()->value_name("ISS"),
       "a token's iss must be ISS (default: iss is not checked)")
      ("jwt-max-lifetime", po::value<long long>()->value_name("SECONDS"),
       "a token living longer (exp - iat, or exp - now) is refused (default 604800, 7 days; "
       "0: no maximum)")
      ("metrics-auth", po::bool_switch(),
       "GET /metrics wants Authorization: Bearer $PUSHONCE_ADMIN_TOKEN")
      ("gate-cookie-domain", po::value<std::string>()->value_name("DOMAIN"),
       "POST /api/gate/cookie sets the cookie for DOMAIN (a checkout on another subdomain; "
       "default: this host only)")
      ("trusted-proxy", po::value<std::string>()->value_name("ADDR[,ADDR|CIDR...]"),
       "proxies whose X-Forwarded-For gives the client address (env PUSHONCE_TRUSTED_PROXY; "
       "default: none, the TCP peer is the client)");
  // clang-format on
  return d;
}

// A count option: 0 (off) to `max`.
std::optional<long long> count(const po::variables_map& vm, const char* name, long long max,
                               long long min = 0) {
  if (!vm.count(name)) return std::nullopt;
  auto v = vm[name].as<long long>();
  if (v < min || v > max) throw usage_error(fmt::format("--{}: expected {} to {}", name, min, max));
  return v;
}

void read_limits(const po::variables_map& vm, gateway::server_options& o) {
  auto& s = o.settings;
  constexpr long long big = 100'000'000;
  if (auto v = count(vm, "max-connections", big)) o.max_connections = *v;
  if (auto v = count(vm, "max-connections-per-ip", big)) s.max_connections_per_ip = *v;
  if (auto v = count(vm, "max-sessions-per-ip", big)) s.max_sessions_per_ip = *v;
  if (auto v = count(vm, "max-sessions-per-user", big)) s.max_sessions_per_user = *v;
  if (auto v = count(vm, "http-idle-timeout-ms", 3'600'000, 100))
    s.http_idle_timeout = std::chrono::milliseconds(*v);
  if (auto v = count(vm, "http-header-timeout-ms", 600'000, 100))
    s.http_header_timeout = std::chrono::milliseconds(*v);
  if (auto v = count(vm, "http-max-requests", big)) s.http_max_requests = *v;
  if (auto v = count(vm, "presence-check-ms", 600'000, 1000))
    s.presence_check = std::chrono::milliseconds(*v);
  if (auto v = count(vm, "hello-timeout-ms", 600'000, 1000))
    s.hello_timeout = std::chrono::milliseconds(*v);
  if (auto v = count(vm, "close-timeout-ms", 600'000, 100))
    s.close_timeout = std::chrono::milliseconds(*v);
  if (auto v = count(vm, "frame-rate", big)) s.frame_rates.frames_per_s = *v;
  if (auto v = count(vm, "frame-burst", big, 1)) s.frame_rates.frame_burst = *v;
  if (auto v = count(vm, "queue-op-rate", big)) s.frame_rates.queue_ops_per_s = *v;
  if (auto v = count(vm, "queue-op-burst", big, 1)) s.frame_rates.queue_op_burst = *v;
  if (auto v = count(vm, "rate-limit-strikes", big)) s.frame_rates.strikes = *v;
  if (auto v = count(vm, "publish-rate", big)) s.publish_rate = *v;
  if (auto v = count(vm, "publish-burst", big, 1)) s.publish_burst = *v;
  if (vm.count("publish-rate") && !vm.count("publish-burst"))
    s.publish_burst = std::max<double>(1, 2 * s.publish_rate);
  s.metrics_auth = vm["metrics-auth"].as<bool>();
  if (auto v = count(vm, "jwt-leeway", 3600)) s.jwt.leeway = std::chrono::seconds(*v);
  if (auto v = count(vm, "jwt-max-lifetime", jwt::max_ttl.count()))
    s.jwt.max_lifetime = std::chrono::seconds(*v);
  if (vm.count("jwt-audience")) s.jwt.audience = vm["jwt-audience"].as<std::string>();
  if (vm.count("jwt-issuer")) s.jwt.issuer = vm["jwt-issuer"].as<std::string>();
}

gateway::server_options to_options(const command_line& cl) {
  gateway::server_options o;
  o.common = cl.common;
  if (!cl.positional.empty())
    throw usage_error("unexpected argument '" + cl.positional.front() + "'");
  const auto& vm = cl.vm;
  if (vm.count("listen")) {
    auto [host, port] = gateway::parse_listen(vm["listen"].as<std::string>());
    o.listen_host = host;
    o.listen_port = port;
  }
  o.settings.dev_auth = vm["dev-auth"].as<bool>();
  o.settings.retention = cl.common.retention;
  if (vm.count("allowed-origin"))
    o.settings.allowed_origins = vm["allowed-origin"].as<std::vector<std::string>>();
  if (vm.count("inbox-idle-ms")) {
    auto idle = vm["inbox-idle-ms"].as<long long>();
    if (idle < 300) throw usage_error("--inbox-idle-ms: expected at least 300");
    o.settings.idle_ttl = std::chrono::milliseconds(idle);
  }
  {
    std::optional<long long> delay;
    if (vm.count("drain-delay-ms")) {
      delay = vm["drain-delay-ms"].as<long long>();
    } else if (const char* env = std::getenv("PUSHONCE_DRAIN_DELAY_MS"); env && *env) {
      char* end = nullptr;
      delay = std::strtoll(env, &end, 10);
      if (*end != '\0') delay = -1;
    }
    if (delay && (*delay < 0 || *delay > 600000))
      throw usage_error("--drain-delay-ms: expected 0-600000");
    if (delay) o.settings.drain_delay = std::chrono::milliseconds(*delay);
  }
  if (vm.count("position-interval-ms")) {
    auto ms = vm["position-interval-ms"].as<long long>();
    if (ms < 10 || ms > 600000) throw usage_error("--position-interval-ms: expected 10-600000");
    o.settings.position_interval = std::chrono::milliseconds(ms);
  }
  if (vm.count("approx-after")) {
    auto n = vm["approx-after"].as<long long>();
    if (n < 0 || n > 1000000000) throw usage_error("--approx-after: expected 0-1000000000");
    o.settings.approx_after = n;
  }
  if (vm.count("threads")) {
    o.threads = vm["threads"].as<unsigned>();
    if (o.threads < 1 || o.threads > 256) throw usage_error("--threads: expected 1-256");
  }
  o.settings.id = make_process_id(heartbeat::hostname());
  if (vm.count("id")) {
    o.settings.id = vm["id"].as<std::string>();
    if (!valid_name(o.settings.id))
      throw usage_error("--id: use 1-128 characters of A-Z a-z 0-9 . _ @ -");
  }
  // Secrets: PUSHONCE_X or the file named by PUSHONCE_X_FILE (systemd credentials).
  o.settings.api_key = secret_from_env("PUSHONCE_API_KEY");
  // A rotation: the key being replaced, accepted too until it is removed.
  o.settings.api_key_previous = secret_from_env("PUSHONCE_API_KEY_PREVIOUS");
  // The previous JWT secret of a rotation is held to the same rule as the current one.
  if (auto why = jwt::secret_problem(secret_from_env("PUSHONCE_JWT_SECRET_PREVIOUS").value_or(""));
      !why.empty())
    throw usage_error("PUSHONCE_JWT_SECRET_PREVIOUS: " + why);
  o.settings.admin_token = secret_from_env("PUSHONCE_ADMIN_TOKEN");
  for (auto [name, value] : {std::pair{"PUSHONCE_API_KEY", &o.settings.api_key},
                             std::pair{"PUSHONCE_ADMIN_TOKEN", &o.settings.admin_token}})
    if (*value && value->value().size() < min_shared_secret_bytes)
      log::warn(
          "{} (or {}_FILE) has {} bytes: easy to guess; use at least {} (e.g. head -c 32 "
          "/dev/urandom | base64)",
          name, name, value->value().size(), min_shared_secret_bytes);
  secret_from_env("PUSHONCE_JWT_SECRET");  // a bad setting is a usage error now, not later
  if (auto why = jwt::secret_problem(jwt::secret_from_env()); !why.empty()) throw usage_error(why);
  read_limits(vm, o);
  if (const char* env = std::getenv("PUSHONCE_JWT_JWKS"); env && *env) o.jwks_path = env;
  if (vm.count("jwt-jwks")) o.jwks_path = vm["jwt-jwks"].as<std::string>();
  if (!o.jwks_path.empty()) {
    try {
      gateway::key_set::load(o.jwks_path);
    } catch (const std::invalid_argument& e) {
      throw usage_error(std::string("--jwt-jwks: ") + e.what());
    }
  }
  o.settings.max_data_bytes = cl.common.max_data_bytes;
  try {
    auto keys = ::pushonce::admission::load(cl.common.admission);
    o.settings.admission_jwks = keys.verify->jwks_json();
    o.settings.admission_verifier = keys.verify;
    o.settings.admission_issuer = cl.common.admission.issuer;
  } catch (const std::invalid_argument& e) {
    throw usage_error(e.what());
  }
  if (vm.count("gate-cookie-domain"))
    o.settings.gate_cookie_domain = vm["gate-cookie-domain"].as<std::string>();
  std::string proxies;
  if (const char* env = std::getenv("PUSHONCE_TRUSTED_PROXY"); env && *env) proxies = env;
  if (vm.count("trusted-proxy")) proxies = vm["trusted-proxy"].as<std::string>();
  try {
    o.settings.trusted = gateway::trusted_proxies::parse(proxies);
  } catch (const std::invalid_argument& e) {
    throw usage_error(std::string("--trusted-proxy: ") + e.what());
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  auto own = own_options();
  program_info info{"pushonce-gateway", usage};
  return run_program(argc, argv, info, own, [&](command_line& cl) {
    auto opts = to_options(cl);
    // Validate the address now: a bad host is a usage error, not a runtime failure.
    boost::system::error_code ec;
    boost::asio::ip::make_address(opts.listen_host, ec);
    if (ec) throw usage_error("--listen: '" + opts.listen_host + "' is not an IP address");
    log::set_identity("gateway", opts.settings.id);
    // Nothing this gateway does can be right with the wrong layout: it stops before it
    // delivers anything, with the exit status of a usage error (as for a bad option).
    opts.on_layout_conflict = [](const std::string& why) {
      log::error("{}", why);
      std::_Exit(exit_usage);
    };
    gateway::server srv(std::move(opts));
    return srv.run();
  });
}
