// pushonce-gateway: WebSocket/HTTP server (docs/protocol.md "pushonce-gateway").
#include <boost/asio/ip/address.hpp>
#include <boost/program_options/options_description.hpp>
#include <boost/program_options/value_semantic.hpp>
#include <cstdlib>
#include <optional>
#include <thread>

#include "core/config.hpp"
#include "core/heartbeat.hpp"
#include "core/log.hpp"
#include "core/names.hpp"
#include "core/program.hpp"
#include "gateway/server.hpp"

namespace po = boost::program_options;
using namespace pushonce;

namespace {

constexpr const char* usage =
    "usage: pushonce-gateway [--listen HOST:PORT] [--dev-auth] [--allowed-origin ORIGIN]...\n"
    "                        [--threads N] [--id NAME] [common options]\n"
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
      ("threads", po::value<unsigned>()->value_name("N"),
       "threads running the event loop (default 1; see docs/benchmarks.md \"Idle connections\")")
      ("id", po::value<std::string>()->value_name("NAME"),
       "this gateway's id in the heartbeat listing (default: host-pid-random)");
  // clang-format on
  return d;
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
  o.settings.admin_token = secret_from_env("PUSHONCE_ADMIN_TOKEN");
  secret_from_env("PUSHONCE_JWT_SECRET");  // a bad setting is a usage error now, not later
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
    gateway::server srv(std::move(opts));
    return srv.run();
  });
}
