// `pushonce-leader status`: the JSON of core/status.hpp, or a text rendering of it.

#include "core/status.hpp"

#include <boost/json.hpp>
#include <set>

#include "core/json_text.hpp"
#include "core/redis/failure_of.hpp"
#include "leader/cli/admin.hpp"

namespace pushonce::leader {

namespace asio = boost::asio;
namespace json = boost::json;

namespace {

std::string plain(const json::value& v) {
  return v.is_string() ? std::string(v.as_string()) : json_text(v);
}

std::string member_lines(const json::array& members, const char* what) {
  std::string text = std::string(what) + ": " + std::to_string(members.size()) + "\n";
  for (auto& m : members) {
    const auto& o = m.as_object();
    text += "  " + plain(o.at("id")) + " pid " + plain(o.at("pid")) + " on " + plain(o.at("host"));
    if (o.contains("sessions")) text += ", " + plain(o.at("sessions")) + " sessions";
    if (o.contains("bus_shards")) text += ", " + plain(o.at("bus_shards")) + " bus shards";
    text += "\n";
  }
  return text;
}

// Every worker and gateway must publish and listen on the same --bus-shards.
std::string shard_warning(const json::object& s) {
  std::set<std::string> seen;
  for (const char* kind : {"workers", "gateways"})
    for (auto& m : s.at(kind).as_array())
      if (m.as_object().contains("bus_shards")) seen.insert(plain(m.as_object().at("bus_shards")));
  if (seen.size() < 2) return {};
  std::string list;
  for (auto& n : seen) list += (list.empty() ? "" : ", ") + n;
  return "warning: processes run with different --bus-shards (" + list +
         "): give every process the same number\n";
}

// " (rate 600)" when the setting bounds the figure before it, "" when it is 0 (no limit).
std::string limit_text(const json::object& q, const char* field, const char* name) {
  const auto* v = q.if_contains(field);
  if (!v || !v->is_int64() || v->as_int64() == 0) return "";
  return std::string(" (") + name + " " + std::to_string(v->as_int64()) + ")";
}

std::string render(const json::object& s, const std::string& queue) {
  std::string text;
  if (s.at("leader").is_object()) {
    const auto& l = s.at("leader").as_object();
    text += "leader: " + plain(l.at("id")) + " (pid " + plain(l.at("pid")) + " on " +
            plain(l.at("host")) + ", fencing token " + plain(l.at("fencing_token")) + ")\n";
  } else {
    text += "leader: none (nothing is assigned until a leader runs)\n";
  }
  for (auto& [name, v] : s.at("counters").as_object())
    text += std::string(name) + ": " + plain(v) + "\n";
  const auto& r = s.at("resources").as_object();
  text += "queue " + queue + ": " + plain(s.at("queue_length")) + " waiting\n" +
          "resources: " + plain(r.at("free")) + " free, " + plain(r.at("assigned")) +
          " assigned\n" + member_lines(s.at("workers").as_array(), "workers") +
          member_lines(s.at("gateways").as_array(), "gateways") + shard_warning(s);
  if (auto* queues = s.if_contains("queues"))
    for (const auto& [name, v] : queues->as_object()) {
      const auto& q = v.as_object();
      text += "queue " + std::string(name) + ": " + plain(q.at("state")) +
              (q.at("paused").as_bool() ? ", paused" : "") + ", " + plain(q.at("length")) +
              " waiting, " + plain(q.at("prequeue_length")) + " pre-queued" +
              (q.at("opens_at").is_null() ? "" : ", opens at " + plain(q.at("opens_at"))) + ", " +
              plain(q.at("assignment_rate_per_min")) + " assignments/min" +
              limit_text(q, "rate_per_min", "rate") + ", " + plain(q.at("active")) + " active" +
              limit_text(q, "max_active", "max") + ", refused " + plain(q.at("refused_closed")) +
              " closed / " + plain(q.at("refused_full")) + " full, " + plain(q.at("abandoned")) +
              " abandoned\n";
    }
  if (auto* unserved = s.if_contains("slots_without_master"))
    text += "redis cluster: " +
            (unserved->as_string().empty()
                 ? std::string("every slot has a master")
                 : "slots without a master: " + std::string(unserved->as_string()) +
                       " (their keys are refused until a replica is promoted)") +
            "\n";
  return text;
}

}  // namespace

asio::awaitable<int> run_status(admin_context& ctx) {
  if (!ctx.args.empty()) co_return ctx.out.usage("usage: pushonce-leader status [--queue Q]");
  // A queue named with --queue that no leader has run is not_found, as for join.
  if (ctx.vm.count("queue")) {
    redis::command exists{"EXISTS", ctx.k.queue(ctx.queue, "registered")};
    auto r = co_await ctx.conn->exec(std::move(exists));
    if (!r.ok()) co_return ctx.out.fail(failure_of(r));
    if (r.value.integer == 0)
      co_return ctx.out.fail(
          failure{errc::not_found, "queue " + ctx.queue + " is not run by any leader"});
  }
  auto s = co_await collect_status(ctx.conn, ctx.k, ctx.queue);
  if (!s) co_return ctx.out.fail(s.error());
  co_return ctx.out.ok(s.value(), render(s.value(), ctx.queue));
}

}  // namespace pushonce::leader
