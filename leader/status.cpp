// `pushonce-leader status`: the leader, queue length, resources, counters, live workers and
// gateways (PROTOCOL.md).

#include <boost/json.hpp>
#include <chrono>

#include "core/queue_api.hpp"
#include "leader/admin.hpp"

namespace pushonce::leader {

namespace asio = boost::asio;
namespace json = boost::json;

namespace {

long long now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

json::value number_or_string(const std::string& s) {
  try {
    std::size_t used = 0;
    long long v = std::stoll(s, &used);
    if (used == s.size()) return v;
  } catch (...) {
  }
  return json::value(s);
}

json::object hash_to_object(const redis::reply& r) {
  json::object o;
  for (std::size_t i = 0; i + 1 < r.elements.size(); i += 2)
    o[r.elements[i].str] = number_or_string(r.elements[i + 1].str);
  return o;
}

// The live members of NS:workers / NS:gateways with their info hashes.
asio::awaitable<outcome<json::array>> live_members(admin_context& ctx, std::string kind) {
  redis::command range{"ZRANGEBYSCORE", ctx.k.plain(kind + "s"), std::to_string(now_ms() - 3000),
                       "+inf"};
  auto ids = co_await ctx.conn->exec(std::move(range));
  if (!ids.ok()) co_return failure_of(ids);
  std::vector<redis::command> cmds;
  for (auto& id : ids.value.elements) cmds.push_back({"HGETALL", ctx.k.plain(kind + ":" + id.str)});
  auto infos = co_await ctx.conn->exec_all(std::move(cmds));
  json::array out;
  for (auto& info : infos) {
    if (!info.ok()) co_return failure_of(info);
    if (info.value.elements.empty()) continue;  // expired between the two reads
    auto o = hash_to_object(info.value);
    json::object item{{"id", o["id"].is_string() ? o["id"] : json::value(json::serialize(o["id"]))},
                      {"pid", o["pid"]},
                      {"host", o["host"]},
                      {"last_seen", o["last_seen"]}};
    if (kind == "gateway") item["sessions"] = o.contains("sessions") ? o["sessions"] : json::value(0);
    out.push_back(std::move(item));
  }
  co_return out;
}

std::string plain(const json::value& v) {
  return v.is_string() ? std::string(v.as_string()) : json::serialize(v);
}

std::string member_lines(const json::array& members, const char* what) {
  std::string text = std::string(what) + ": " + std::to_string(members.size()) + "\n";
  for (auto& m : members) {
    const auto& o = m.as_object();
    text += "  " + plain(o.at("id")) + " pid " + plain(o.at("pid")) + " on " + plain(o.at("host"));
    if (o.contains("sessions")) text += ", " + plain(o.at("sessions")) + " sessions";
    text += "\n";
  }
  return text;
}

}  // namespace

asio::awaitable<int> run_status(admin_context& ctx) {
  if (!ctx.args.empty()) co_return ctx.out.usage("usage: pushonce-leader status [--queue Q]");
  queue_api q(ctx.conn, ctx.k);
  std::vector<redis::command> cmds{{"HGETALL", ctx.k.plain("leader")},
                                   {"ZCARD", ctx.k.queue(ctx.queue, "waiting")},
                                   {"HGETALL", ctx.k.plain("stats")}};
  auto rs = co_await ctx.conn->exec_all(std::move(cmds));
  for (auto& r : rs)
    if (!r.ok()) co_return ctx.out.fail(failure_of(r));
  auto counts = co_await q.resource_counts(ctx.queue);
  if (!counts) co_return ctx.out.fail(counts.error());
  auto workers = co_await live_members(ctx, "worker");
  if (!workers) co_return ctx.out.fail(workers.error());
  auto gateways = co_await live_members(ctx, "gateway");
  if (!gateways) co_return ctx.out.fail(gateways.error());

  json::value leader = nullptr;
  std::string text;
  if (!rs[0].value.elements.empty()) {
    auto l = hash_to_object(rs[0].value);
    leader = json::object{{"id", l["id"]}, {"pid", l["pid"]}, {"host", l["host"]},
                          {"fencing_token", l["fencing_token"]}, {"since", l["since"]}};
    text += "leader: " + plain(l["id"]) + " (pid " + plain(l["pid"]) + " on " + plain(l["host"]) +
            ", fencing token " + plain(l["fencing_token"]) + ")\n";
  } else {
    text += "leader: none (nothing is assigned until a leader runs)\n";
  }
  auto stats = hash_to_object(rs[2].value);
  json::object counters;
  for (auto name : {"published", "delivered", "duplicates_suppressed", "redelivered", "dead_lettered"}) {
    auto v = stats.contains(name) ? stats[name] : json::value(0);
    counters[name] = v;
    text += std::string(name) + ": " + json::serialize(v) + "\n";
  }
  text = text + "queue " + ctx.queue + ": " + std::to_string(rs[1].value.integer) + " waiting\n" +
         "resources: " + std::to_string(counts.value().first) + " free, " +
         std::to_string(counts.value().second) + " assigned\n" +
         member_lines(workers.value(), "workers") + member_lines(gateways.value(), "gateways");
  json::object o{{"leader", leader},
                 {"queue_length", rs[1].value.integer},
                 {"resources", json::object{{"free", counts.value().first},
                                            {"assigned", counts.value().second}}},
                 {"counters", std::move(counters)},
                 {"workers", std::move(workers.value())},
                 {"gateways", std::move(gateways.value())}};
  co_return ctx.out.ok(o, text);
}

}  // namespace pushonce::leader
