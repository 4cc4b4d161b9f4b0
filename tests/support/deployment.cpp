#include "tests/support/deployment.hpp"

#include <boost/json.hpp>
#include <csignal>
#include <cstdlib>
#include <sstream>
#include <stdexcept>

#include "tests/support/redis_server.hpp"
#include "tests/support/ws_client.hpp"

namespace pushonce::test {

namespace json = boost::json;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

redis_server& shared_redis() {
  static redis_server server;
  return server;
}

std::string program_path(const std::string& name) {
  const char* dir = std::getenv("PUSHONCE_TEST_BIN_DIR");
  return std::string(dir != nullptr && *dir != '\0' ? dir : PUSHONCE_BIN_DIR) + "/" + name;
}

std::string cli_result::error() const {
  if (!out.is_object() || !out.as_object().contains("error")) return {};
  auto& e = out.as_object().at("error");
  return e.is_string() ? std::string(e.as_string()) : json::serialize(e);
}

bool cli_result::error_line() const {
  std::istringstream in(run.err);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("error:", 0) == 0) return true;
  return false;
}

std::string cli_result::describe() const {
  return "exit " + std::to_string(run.exit_code) + (run.timed_out ? " (timed out)" : "") +
         "\nstdout: " + run.out + "\nstderr: " + run.err;
}

cli_result run_cli(const std::string& program, const std::vector<std::string>& args,
                   const environment& env, std::chrono::milliseconds timeout) {
  auto path = program.find('/') == std::string::npos ? program_path(program) : program;
  cli_result r;
  auto start = clock_type::now();
  r.run = run_capture(path, args, env, timeout);
  r.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - start);
  r.out = parse_or_null(r.run.out);
  return r;
}

long long counter(const json::object& status, const char* name) {
  auto* counters = status.if_contains("counters");
  return counters && counters->is_object() ? int_field(counters->as_object(), name) : -1;
}

std::string str_field(const json::object& o, const char* name) {
  auto* v = o.if_contains(name);
  return v && v->is_string() ? std::string(v->as_string()) : std::string();
}

long long int_field(const json::object& o, const char* name) {
  auto* v = o.if_contains(name);
  return v && v->is_number() ? v->to_number<long long>() : -1;
}

json::value parse_or_null(const std::string& text) {
  boost::system::error_code ec;
  auto v = json::parse(text, ec);
  return ec ? json::value(nullptr) : v;
}

namespace {

const char* program_of(deployment::kind k) {
  switch (k) {
    case deployment::kind::leader:
      return "pushonce-leader";
    case deployment::kind::worker:
      return "pushonce-worker";
    case deployment::kind::gateway:
      return "pushonce-gateway";
  }
  return "";
}

const char* prefix_of(deployment::kind k) {
  return k == deployment::kind::leader ? "l" : k == deployment::kind::worker ? "w" : "g";
}

std::string find_arg(const std::vector<std::string>& args, const std::string& name) {
  for (std::size_t i = 0; i + 1 < args.size(); ++i)
    if (args[i] == name) return args[i + 1];
  return {};
}

}  // namespace

deployment::deployment(deployment_options o)
    : opts_(std::move(o)), keys_(opts_.ns), redis_(opts_.redis_port) {
  env_ = {{"PUSHONCE_REDIS", opts_.redis_url},     {"PUSHONCE_NAMESPACE", opts_.ns},
          {"PUSHONCE_LOG_LEVEL", opts_.log_level}, {"PUSHONCE_API_KEY", std::nullopt},
          {"PUSHONCE_JWT_SECRET", std::nullopt},   {"PUSHONCE_ADMIN_TOKEN", std::nullopt}};
  env_ = merged(std::move(env_), opts_.env);
}

deployment::deployment(const std::string& prefix, const std::string& what, environment env)
    : deployment(deployment_options{shared_redis().url(),
                                    shared_redis().port(),
                                    unique_namespace(prefix, what),
                                    std::move(env),
                                    {},
                                    "warn"}) {}

deployment::~deployment() {
  for (auto& e : procs_) e.proc->kill(SIGKILL);
}

process& deployment::spawn(kind what, std::vector<std::string> args, std::uint16_t port) {
  auto id = find_arg(args, "--id");
  if (id.empty()) {
    static int next_id = 0;  // unique in the test program: deployments may share a namespace
    id = prefix_of(what) + std::to_string(++next_id);
    args.push_back("--id");
    args.push_back(id);
  }
  auto p = std::make_unique<process>(program_path(program_of(what)), std::move(args), env_,
                                     opts_.logs_dir);
  procs_.push_back(entry{what, std::move(id), port, std::move(p)});
  return *procs_.back().proc;
}

process& deployment::start_leader(std::vector<std::string> args) {
  // A join is refused (not_found) until a leader registered its queue: wait for that, so
  // that a test's first join does not race the leader's start (unless it exits first).
  std::string queue = "default";
  for (std::size_t i = 0; i + 1 < args.size(); ++i)
    if (args[i] == "--queue") queue = args[i + 1];
  args.insert(args.begin(), "run");
  auto& p = spawn(kind::leader, std::move(args), 0);
  const auto registered = keys_.queue(queue, "registered");
  wait_until([&] { return !p.running() || redis().integer({"EXISTS", registered}) == 1; }, 10s);
  return p;
}

process& deployment::start_worker(std::vector<std::string> args) {
  return spawn(kind::worker, std::move(args), 0);
}

process& deployment::start_gateway(std::vector<std::string> args, std::uint16_t port) {
  if (port == 0) port = free_port();
  args.insert(args.begin(), {"--listen", "127.0.0.1:" + std::to_string(port)});
  return spawn(kind::gateway, std::move(args), port);
}

process& deployment::get(kind k, std::size_t i) {
  for (auto& e : procs_)
    if (e.what == k && i-- == 0) return *e.proc;
  throw std::out_of_range(std::string("no such process: ") + program_of(k));
}

std::size_t deployment::count(kind k) const {
  std::size_t n = 0;
  for (auto& e : procs_) n += e.what == k;
  return n;
}

const std::string& deployment::id_of(const process& p) const {
  for (auto& e : procs_)
    if (e.proc.get() == &p) return e.id;
  throw std::out_of_range("not a process of this deployment");
}

std::uint16_t deployment::port_of(const process& p) const {
  for (auto& e : procs_)
    if (e.proc.get() == &p) return e.port;
  throw std::out_of_range("not a process of this deployment");
}

std::vector<process*> deployment::all(kind k) {
  std::vector<process*> out;
  for (auto& e : procs_)
    if (e.what == k) out.push_back(e.proc.get());
  return out;
}

std::vector<process*> deployment::running(kind k) {
  std::vector<process*> out;
  for (auto& e : procs_)
    if (e.what == k && e.proc->running()) out.push_back(e.proc.get());
  return out;
}

cli_result deployment::admin(std::vector<std::string> args, environment extra,
                             std::chrono::milliseconds timeout) {
  return run_cli("pushonce-leader", args, merged(env_, extra), timeout);
}

json::object deployment::admin_json(std::vector<std::string> args) {
  args.push_back("--json");
  auto r = admin(std::move(args));
  if (r.code() != 0 || !r.out.is_object())
    throw std::runtime_error("pushonce-leader: " + r.describe());
  return r.out.as_object();
}

std::string deployment::publish(const std::string& user, const std::string& data_json) {
  auto id = str_field(admin_json({"publish", user, data_json}), "id");
  if (id.empty() || id.find_first_not_of("0123456789") != std::string::npos)
    throw std::runtime_error("publish: not a decimal id: " + id);
  return id;
}

json::object deployment::status() {
  return admin_json({"status"});
}

long long deployment::counter(const char* name) {
  return test::counter(status(), name);
}

bool deployment::wait_subscribers(const std::string& channel, long long n,
                                  std::chrono::milliseconds timeout) {
  return wait_until([&] { return redis_.subscribers(channel) == n; }, timeout);
}

// The leader's subscriber connection is named after its --id: counting the wake channel's
// subscribers would not tell (gateways listen there too).
bool deployment::client_subscribed(const std::string& client_name) {
  auto list = redis_.text({"CLIENT", "LIST"});
  const std::string name = "name=" + client_name + " ";
  for (std::size_t pos = 0; (pos = list.find(name, pos)) != std::string::npos; pos += name.size()) {
    auto eol = list.find('\n', pos);
    auto line = list.substr(pos, eol == std::string::npos ? std::string::npos : eol - pos);
    auto sub = line.find(" sub=");
    if (sub != std::string::npos && std::atoi(line.c_str() + sub + 5) >= 1) return true;
  }
  return false;
}

std::string deployment::check_ready() {
  auto leaders = running(kind::leader);
  if (count(kind::leader) > 0 && leaders.empty()) return "no leader is running";
  if (!leaders.empty() && redis_.integer({"EXISTS", key("leader")}) != 1) return "no leader lease";
  for (auto* l : leaders)
    if (!client_subscribed("pushonce-leader:" + id_of(*l)))
      return "leader " + id_of(*l) + " does not listen for wake-ups";
  auto workers = static_cast<long long>(running(kind::worker).size());
  if (auto n = redis_.subscribers(keys_.bus_channel()); n != workers)
    return std::to_string(n) + " subscribers of the bus, " + std::to_string(workers) + " workers";
  for (auto* g : running(kind::gateway)) {
    auto r = http_request("127.0.0.1", port_of(*g), "GET", "/healthz", {}, {}, 1s);
    if (r.status != 200)
      return "gateway " + id_of(*g) + ": /healthz " + std::to_string(r.status) + " " + r.error;
  }
  if (count(kind::gateway) != running(kind::gateway).size()) return "a gateway exited";
  return {};
}

bool deployment::wait_ready(std::chrono::milliseconds timeout) {
  std::string why;
  bool ok = wait_until(
      [&] {
        why = check_ready();
        return why.empty();
      },
      timeout, 50ms);
  ready_failure_ = ok ? std::string() : "not ready: " + why + "\n" + logs();
  return ok;
}

std::string deployment::logs() const {
  std::string text;
  for (auto& e : procs_)
    text += "--- " + std::string(program_of(e.what)) + " " + e.id + " (pid " +
            std::to_string(e.proc->pid()) + ") stderr:\n" + e.proc->stderr_text();
  return text;
}

std::string deployment::digest(std::size_t max_chars) const {
  std::string out;
  for (auto& e : procs_) {
    std::string lines, text = e.proc->stderr_text();
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
      if (line.find("--dev-auth") != std::string::npos) continue;
      if (line.find("warn") != std::string::npos || line.find("error") != std::string::npos)
        lines += line + "\n";
    }
    if (lines.size() > 1500) lines = "..." + lines.substr(lines.size() - 1500);
    auto status = e.proc->exit_status();
    if (!lines.empty())
      out += "--- " + std::string(program_of(e.what)) + " " + e.id + " pid " +
             std::to_string(e.proc->pid()) + " (exit " + (status ? std::to_string(*status) : "-") +
             "):\n" + lines;
  }
  if (out.size() > max_chars) out = "..." + out.substr(out.size() - max_chars);
  if (!opts_.logs_dir.empty()) out += "(logs in " + opts_.logs_dir + ")\n";
  return out;
}

}  // namespace pushonce::test
