#include "bench/bench_options.hpp"

#include <fmt/format.h>

#include <boost/program_options/value_semantic.hpp>
#include <charconv>
#include <cmath>

#include "core/config.hpp"
#include "core/jwt.hpp"

namespace pushonce::bench {
namespace po = boost::program_options;
namespace {

std::vector<std::string> split(std::string_view s) {
  std::vector<std::string> out;
  while (!s.empty()) {
    auto comma = s.find(',');
    auto part = s.substr(0, comma);
    if (!part.empty()) out.emplace_back(part);
    if (comma == std::string_view::npos) break;
    s.remove_prefix(comma + 1);
  }
  return out;
}

std::uint64_t number(const po::variables_map& vm, const char* name, std::uint64_t fallback,
                     std::uint64_t min, std::uint64_t max) {
  if (vm.count(name) == 0) return fallback;
  const auto& text = vm[name].as<std::string>();
  std::uint64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || end != text.data() + text.size() || v < min || v > max)
    throw usage_error(
        fmt::format("--{}: '{}' is not an integer from {} to {}", name, text, min, max));
  return v;
}

std::chrono::milliseconds seconds(const po::variables_map& vm, const char* name,
                                  std::chrono::milliseconds fallback) {
  if (vm.count(name) == 0) return fallback;
  const auto& text = vm[name].as<std::string>();
  double v = -1;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || end != text.data() + text.size() || !(v >= 0) || v > 1e7)
    throw usage_error(fmt::format("--{}: '{}' is not a number of seconds", name, text));
  return std::chrono::milliseconds(std::llround(v * 1000));
}

std::string secret(const po::variables_map& vm, const char* option, const char* env) {
  if (vm.count(option) != 0) return vm[option].as<std::string>();
  return secret_from_env(env).value_or("");
}

}  // namespace

endpoint parse_endpoint(std::string_view text, std::string_view option) {
  auto bad = [&](std::string_view why) {
    return usage_error(fmt::format("{}: '{}' {}", option, text, why));
  };
  std::string_view s = text;
  for (std::string_view scheme : {"ws://", "http://"})
    if (s.substr(0, scheme.size()) == scheme) s.remove_prefix(scheme.size());
  if (s.substr(0, 6) == "wss://" || s.substr(0, 8) == "https://")
    throw bad("uses TLS, which pushonce-bench does not speak: point it at the gateways");
  s = s.substr(0, s.find('/'));
  auto colon = s.rfind(':');
  if (colon == std::string_view::npos || colon == 0) throw bad("is not HOST:PORT");
  auto port_text = s.substr(colon + 1);
  unsigned port = 0;
  auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc{} || end != port_text.data() + port_text.size() || port == 0 || port > 65535)
    throw bad("has no valid port");
  endpoint e;
  e.host = std::string(s.substr(0, colon));
  if (e.host.size() > 2 && e.host.front() == '[' && e.host.back() == ']')
    e.host = e.host.substr(1, e.host.size() - 2);
  e.port = static_cast<std::uint16_t>(port);
  return e;
}

po::options_description bench_option_description() {
  po::options_description d("pushonce-bench options");
  auto text = [] { return po::value<std::string>(); };
  // clang-format off
  d.add_options()
      ("gateway", text()->value_name("URL,..."),
       "gateways to open sessions on: HOST:PORT, ws://HOST:PORT or http://HOST:PORT, comma-separated")
      ("publish-url", text()->value_name("URL"),
       "where POST /api/publish goes (default: the first gateway)")
      ("api-key", text()->value_name("KEY"), "the publish API key (env PUSHONCE_API_KEY)")
      ("jwt-secret", text()->value_name("S"),
       "sign a token per user (env PUSHONCE_JWT_SECRET); without it, dev auth ({\"user\"})")
      ("sessions", text()->value_name("N"), "WebSocket sessions (200); session i is user i mod M")
      ("users", text()->value_name("M"), "distinct users (100); message k goes to user k mod M")
      ("messages", text()->value_name("N"),
       "messages to publish (default 20000, or --rate x --duration)")
      ("duration", text()->value_name("S"), "seconds of publishing (instead of --messages)")
      ("rate", text()->value_name("R"), "messages per second on a fixed schedule (0: as fast as possible)")
      ("batch", text()->value_name("B"), "messages per publish request, 1-1000 (100)")
      ("inflight", text()->value_name("K"), "publish connections, one request each (4)")
      ("source", text()->value_name("ADDR,..."),
       "local addresses to connect from, round robin (each has its own ~28k ports per gateway)")
      ("threads", text()->value_name("T"), "threads holding the sessions (1)")
      ("transport", text()->value_name("ws|sse"), "how the sessions connect: WebSocket /ws (ws, the default) or SSE /sse")
      ("connect-rate", text()->value_name("N"), "new sessions per second (0: as fast as they open)")
      ("connect-concurrency", text()->value_name("N"), "handshakes in flight at once (200)")
      ("grace", text()->value_name("S"), "seconds to wait for missing frames after the last publish (5)")
      ("linger", text()->value_name("S"), "seconds to wait for late duplicates after that (0.3)")
      ("hold", text()->value_name("S"), "seconds to hold the sessions after they opened, before publishing (0)")
      ("pids", text()->value_name("PID,..."), "processes (gateways) whose RSS and CPU are reported")
      ("user-prefix", text()->value_name("P"), "user name prefix (default pb-RUN-, new users every run)")
      ("json", po::bool_switch(), "print one JSON object on stdout instead of the table")
      ("progress", po::bool_switch(), "a progress line every second on stderr (default: on a terminal)")
      ("no-progress", po::bool_switch(), "no progress lines")
      ("no-idempotency-keys", po::bool_switch(),
       "publish without idempotency keys (what Redis keeps for them is not measured); a "
       "request is then sent again only after a 429")
      ("duplicate-every", text()->value_name("N"),
       "floor: the stand-in sends every Nth frame twice (the verifier must catch it)")
      ("floor-ports", text()->value_name("N"), "floor: listening ports of the stand-in (2)");
  // clang-format on
  return d;
}

bench_options parse_bench_options(const po::variables_map& vm,
                                  const std::vector<std::string>& positional) {
  bench_options o;
  if (positional.empty()) throw usage_error("give a subcommand: fanout, idle or floor");
  if (positional.size() > 1)
    throw usage_error(fmt::format("unexpected argument '{}'", positional[1]));
  const auto& cmd = positional[0];
  if (cmd == "fanout")
    o.what = bench_options::mode::fanout;
  else if (cmd == "idle")
    o.what = bench_options::mode::idle;
  else if (cmd == "floor")
    o.what = bench_options::mode::floor;
  else if (cmd == "queue")
    throw usage_error("no queue mode: the waiting-room workload is build/bin/bench_waiting_room");
  else
    throw usage_error(fmt::format("unknown subcommand '{}' (fanout, idle or floor)", cmd));

  if (vm.count("gateway") != 0)
    for (const auto& g : split(vm["gateway"].as<std::string>()))
      o.gateways.push_back(parse_endpoint(g, "--gateway"));
  if (o.what != bench_options::mode::floor && o.gateways.empty())
    throw usage_error("--gateway is required (HOST:PORT,...)");
  if (o.what == bench_options::mode::floor && !o.gateways.empty())
    throw usage_error("floor runs against its own stand-in: no --gateway");
  if (vm.count("publish-url") != 0)
    o.publish = parse_endpoint(vm["publish-url"].as<std::string>(), "--publish-url");
  else if (!o.gateways.empty())
    o.publish = o.gateways.front();

  o.api_key = secret(vm, "api-key", "PUSHONCE_API_KEY");
  o.jwt_secret = secret(vm, "jwt-secret", "PUSHONCE_JWT_SECRET");
  if (auto why = jwt::secret_problem(o.jwt_secret); !o.jwt_secret.empty() && !why.empty())
    throw usage_error(fmt::format("--jwt-secret: {}", why));

  o.users = number(vm, "users", 100, 1, 10'000'000);
  o.sessions = number(vm, "sessions", 200, 1, 10'000'000);
  if (o.what == bench_options::mode::idle && vm.count("users") == 0) o.users = o.sessions;
  o.batch = number(vm, "batch", 100, 1, 1000);
  o.inflight = number(vm, "inflight", 4, 1, 1024);
  o.threads = static_cast<unsigned>(number(vm, "threads", 1, 1, 256));
  if (vm.count("transport") != 0) {
    const auto& t = vm["transport"].as<std::string>();
    if (t != "ws" && t != "sse") throw usage_error("--transport: ws or sse");
    o.sse = t == "sse";
  }
  o.connect_rate = number(vm, "connect-rate", 0, 0, 10'000'000);
  o.connect_concurrency = number(vm, "connect-concurrency", 200, 1, 100'000);
  o.duplicate_every = number(vm, "duplicate-every", 0, 0, UINT32_MAX);
  o.floor_ports = number(vm, "floor-ports", 2, 1, 64);
  if (o.duplicate_every != 0 && o.what != bench_options::mode::floor)
    throw usage_error("--duplicate-every is for the floor stand-in");

  if (vm.count("rate") != 0) {
    const auto& t = vm["rate"].as<std::string>();
    auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), o.rate);
    if (ec != std::errc{} || end != t.data() + t.size() || !(o.rate >= 0) || o.rate > 1e8)
      throw usage_error(fmt::format("--rate: '{}' is not a number of messages per second", t));
  }
  o.duration = seconds(vm, "duration", std::chrono::milliseconds(0));
  if (vm.count("messages") != 0 && vm.count("duration") != 0)
    throw usage_error("--messages and --duration: give one");
  o.messages = number(vm, "messages", 0, 0, 1'000'000'000);
  if (vm.count("messages") == 0 && vm.count("duration") == 0)
    o.messages = o.what == bench_options::mode::idle ? 0 : 20000;
  if (o.duration.count() > 0 && o.rate > 0)
    o.messages = static_cast<std::uint64_t>(std::llround(o.rate * o.duration.count() / 1000.0));
  if (o.what == bench_options::mode::floor && o.api_key.empty()) o.api_key = "floor";
  if (o.messages > 0 && o.api_key.empty())
    throw usage_error("publishing needs the API key: --api-key or PUSHONCE_API_KEY");
  o.grace = seconds(vm, "grace", o.grace);
  o.idempotency_keys = !vm["no-idempotency-keys"].as<bool>();
  o.linger = seconds(vm, "linger", o.linger);
  o.hold = seconds(vm, "hold", o.hold);

  if (vm.count("source") != 0) o.sources = split(vm["source"].as<std::string>());
  if (vm.count("pids") != 0)
    for (const auto& p : split(vm["pids"].as<std::string>())) {
      int pid = 0;
      auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), pid);
      if (ec != std::errc{} || end != p.data() + p.size() || pid <= 0)
        throw usage_error(fmt::format("--pids: '{}' is not a process id", p));
      o.pids.push_back(pid);
    }
  if (vm.count("user-prefix") != 0) {
    o.user_prefix = vm["user-prefix"].as<std::string>();
    for (char c : o.user_prefix)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '@' &&
          c != '-')
        throw usage_error("--user-prefix: use A-Z a-z 0-9 . _ @ -");
  }
  o.json = vm["json"].as<bool>();
  if (vm["progress"].as<bool>() && vm["no-progress"].as<bool>())
    throw usage_error("--progress and --no-progress: give one");
  if (vm["progress"].as<bool>()) o.progress_lines = bench_options::progress::on;
  if (vm["no-progress"].as<bool>()) o.progress_lines = bench_options::progress::off;
  return o;
}

}  // namespace pushonce::bench
