// `pushonce-leader settings | pause | resume | close | open`: a queue's run-time settings
// (docs/protocol.md "Waiting room controls"), changed atomically by lua/settings.lua.

#include <boost/json.hpp>
#include <chrono>
#include <variant>

#include "core/json_text.hpp"
#include "core/lua/settings.hpp"
#include "core/queue_api.hpp"
#include "leader/cli/admin.hpp"

namespace pushonce::leader {

namespace asio = boost::asio;
namespace json = boost::json;

namespace {

std::string settings_text(const json::object& o) {
  std::string text;
  for (const auto& [k, v] : o)
    text +=
        std::string(k) + ": " + (v.is_string() ? std::string(v.as_string()) : json_text(v)) + "\n";
  return text;
}

long long controls_now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The change `command` asks for, or a usage message.
std::variant<lua::settings_call, std::string> settings_call_of(admin_context& ctx,
                                                               const std::string& command) {
  lua::settings_call c;
  c.queue = ctx.queue;
  const auto& vm = ctx.vm;
  bool has_values = vm.count("max-waiting") || vm.count("abandon-after") ||
                    vm.count("join-pow-bits") || vm.count("rate") || vm.count("passes") ||
                    vm.count("burst") || vm.count("max-active") || vm.count("session") ||
                    vm.count("session-renewal") ||
                    (vm.count("accept-timeout") && !vm["accept-timeout"].defaulted());
  if (command != "settings" && has_values)
    return "--max-waiting, --abandon-after, --accept-timeout, --join-pow-bits, --rate, "
           "--passes, --burst, --max-active, --session and --session-renewal go with "
           "`settings`";
  if (command != "open" && (vm.count("at") || (vm.count("shuffle") && vm["shuffle"].as<bool>())))
    return "--at and --shuffle go with `open`";
  if (command == "settings") {
    settings_values v;
    if (vm.count("max-waiting")) v.max_waiting = vm["max-waiting"].as<long long>();
    if (vm.count("abandon-after")) v.abandon_after_s = vm["abandon-after"].as<long long>();
    if (vm.count("join-pow-bits")) v.join_pow_bits = vm["join-pow-bits"].as<long long>();
    if (vm.count("rate")) v.rate_per_min = vm["rate"].as<long long>();
    if (vm.count("burst")) v.burst = vm["burst"].as<long long>();
    if (vm.count("max-active")) v.max_active = vm["max-active"].as<long long>();
    if (vm.count("session")) v.session_s = vm["session"].as<long long>();
    for (auto [opt, field] : {std::pair{"passes", &settings_values::passes},
                              std::pair{"session-renewal", &settings_values::session_renewal}}) {
      if (!vm.count(opt)) continue;
      auto word = vm[opt].as<std::string>();
      if (word != "on" && word != "off") return std::string("--") + opt + ": give on or off";
      v.*field = word == "on";
    }
    if (vm.count("accept-timeout") && !vm["accept-timeout"].defaulted()) {
      auto s = vm["accept-timeout"].as<double>();
      if (s != static_cast<double>(static_cast<long long>(s)))
        return "--accept-timeout: give whole seconds";
      v.accept_timeout_s = static_cast<long long>(s);
    }
    if (auto why = settings_problem(v)) return *why;
    c.fields = settings_fields(v);
    c.op = c.fields.empty() ? lua::settings_op::get : lua::settings_op::set;
  } else if (command == "pause") {
    c.op = lua::settings_op::pause;
  } else if (command == "resume") {
    c.op = lua::settings_op::resume;
  } else if (command == "close") {
    c.op = lua::settings_op::close;
  } else {
    c.op = lua::settings_op::open;
    c.shuffle = vm.count("shuffle") && vm["shuffle"].as<bool>();
    if (vm.count("at")) {
      auto at = parse_open_time(vm["at"].as<std::string>());
      if (!at) return "--at: give an RFC 3339 time (2030-01-02T18:00:00Z) or ms since the epoch";
      if (*at <= controls_now_ms()) return "--at: the opening time must be in the future";
      c.opens_at = *at;
    }
  }
  return c;
}

}  // namespace

asio::awaitable<int> run_queue_controls(admin_context& ctx, std::string command) {
  if (!ctx.args.empty())
    co_return ctx.out.usage("usage: pushonce-leader " + command + " [--queue Q] (no arguments)");
  auto call = settings_call_of(ctx, command);
  if (auto* why = std::get_if<std::string>(&call)) co_return ctx.out.usage(*why);
  queue_api q(ctx.conn, ctx.k, ctx.retention);
  auto r = co_await q.settings(std::get<lua::settings_call>(call));
  if (!r) co_return ctx.out.fail(r.error(), r.error().code == errc::bad_request ? 2 : 1);
  auto o =
      render_queue_settings(ctx.queue, r.value().settings, r.value().default_accept_timeout_ms);
  co_return ctx.out.ok(o, settings_text(o));
}

}  // namespace pushonce::leader
