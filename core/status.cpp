#include "core/status.hpp"

#include <boost/json.hpp>
#include <charconv>
#include <chrono>
#include <cmath>

#include "core/assignment_rate.hpp"
#include "core/lua/presence.hpp"
#include "core/queue_api.hpp"
#include "core/queue_settings.hpp"
#include "core/redis/cluster_health.hpp"
#include "core/redis/failure_of.hpp"

namespace pushonce {

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
asio::awaitable<outcome<json::array>> live_members(std::shared_ptr<redis::connection> conn,
                                                   const keys& k, std::string kind) {
  redis::command range{"ZRANGEBYSCORE", k.plain(kind + "s"), std::to_string(now_ms() - 3000),
                       "+inf"};
  auto ids = co_await conn->exec(std::move(range));
  if (!ids.ok()) co_return failure_of(ids);
  std::vector<redis::command> cmds;
  for (auto& id : ids.value.elements) cmds.push_back({"HGETALL", k.plain(kind + ":" + id.str)});
  auto infos = co_await conn->exec_all(std::move(cmds));
  json::array out;
  for (auto& info : infos) {
    if (!info.ok()) co_return failure_of(info);
    if (info.value.elements.empty()) continue;  // expired between the two reads
    auto o = hash_to_object(info.value);
    json::object item{{"id", o["id"].is_string() ? o["id"] : json::value(json::serialize(o["id"]))},
                      {"pid", o["pid"]},
                      {"host", o["host"]},
                      {"last_seen", o["last_seen"]}};
    if (kind == "gateway")
      item["sessions"] = o.contains("sessions") ? o["sessions"] : json::value(0);
    // --bus-shards of the process: every process of a deployment must use the same one.
    if (o.contains("bus_shards")) item["bus_shards"] = o["bus_shards"];
    out.push_back(std::move(item));
  }
  co_return out;
}

std::vector<std::pair<std::string, std::string>> status_fields(const redis::reply& r) {
  std::vector<std::pair<std::string, std::string>> out;
  for (std::size_t i = 0; i + 1 < r.elements.size(); i += 2)
    out.emplace_back(r.elements[i].str, r.elements[i + 1].str);
  return out;
}

std::vector<redis::command> queue_status_reads(const keys& k, const std::string& q) {
  return {{"HGETALL", k.queue(q, "settings")}, {"GET", k.queue(q, "registered")},
          {"ZCARD", k.queue(q, "waiting")},    {"ZCARD", k.queue(q, "prequeue")},
          {"HGETALL", k.queue(q, "stats")},    {"HGETALL", k.queue(q, "rate")},
          {"HLEN", k.queue(q, "assigned")}};
}

}  // namespace

asio::awaitable<outcome<json::object>> collect_queue_status(std::shared_ptr<redis::connection> conn,
                                                            keys k, std::string queue) {
  auto rs = co_await conn->exec_all(queue_status_reads(k, queue));
  for (auto& r : rs)
    if (!r.ok()) co_return failure_of(r);
  auto settings = parse_queue_settings(status_fields(rs[0].value));
  auto o = render_queue_settings(
      queue, settings,
      registered_accept_timeout_ms(rs[1].value.is_string() ? rs[1].value.str : ""));
  o["length"] = rs[2].value.integer;
  o["prequeue_length"] = rs[3].value.integer;
  auto stats = hash_to_object(rs[4].value);
  for (auto name : {"abandoned", "refused_closed", "refused_full", "refused_pow"})
    o[name] = stats.contains(name) ? stats[name] : json::value(0);
  auto rate = parse_assignment_record(status_fields(rs[5].value));
  o["assignment_rate_per_min"] = std::round(assignments_per_minute(rate, now_ms()) * 10) / 10;
  // Live admissions (assigned or accepted, passes and resources alike): what --max-active caps.
  o["active"] = rs[6].value.integer;
  co_return o;
}

asio::awaitable<outcome<json::object>> collect_status(std::shared_ptr<redis::connection> conn,
                                                      keys k, std::string queue) {
  queue_api q(conn, k);
  // Redis Cluster: the slots no master serves, said even when the reads below fail for them.
  std::optional<std::string> unserved;
  if (conn->is_cluster()) {
    redis::command nodes{"CLUSTER", "NODES"};
    auto n = co_await conn->exec(std::move(nodes));
    if (auto ranges = n.ok() ? redis::slots_without_master(n.value.str) : std::nullopt)
      unserved = redis::to_string(*ranges);
  }
  auto with_slots = [&](failure f) {
    if (unserved && !unserved->empty())
      f.message += " (redis cluster slots without a master: " + *unserved + ")";
    return f;
  };
  const auto absent = lua::presence_key(k, "absent");
  std::vector<redis::command> cmds{{"HGETALL", k.plain("leader")},
                                   {"ZCARD", k.queue(queue, "waiting")},
                                   {"HGETALL", k.plain("stats")},
                                   {"ZCARD", absent},
                                   {"ZRANGE", absent, "0", "0", "WITHSCORES"}};
  auto rs = co_await conn->exec_all(std::move(cmds));
  for (auto& r : rs)
    if (!r.ok()) co_return with_slots(failure_of(r));
  auto counts = co_await q.resource_counts(queue);
  if (!counts) co_return with_slots(counts.error());
  auto workers = co_await live_members(conn, k, "worker");
  if (!workers) co_return with_slots(workers.error());
  auto gateways = co_await live_members(conn, k, "gateway");
  if (!gateways) co_return with_slots(gateways.error());

  json::value leader = nullptr;
  if (!rs[0].value.elements.empty()) {
    auto l = hash_to_object(rs[0].value);
    leader =
        json::object{{"id", l["id"].is_string() ? l["id"] : json::value(json::serialize(l["id"]))},
                     {"pid", l["pid"]},
                     {"host", l["host"]},
                     {"fencing_token", l["fencing_token"]},
                     {"since", l["since"]}};
  }
  auto stats = hash_to_object(rs[2].value);
  json::object counters;
  for (auto name :
       {"published", "delivered", "duplicates_suppressed", "redelivered", "dead_lettered",
        "retention_exceeded", "wait_replicas_timeout", "dead_letters_trimmed"})
    counters[name] = stats.contains(name) ? stats[name] : json::value(0);
  json::object out{{"leader", leader},
                   {"queue_length", rs[1].value.integer},
                   {"resources", json::object{{"free", counts.value().first},
                                              {"assigned", counts.value().second}}},
                   {"counters", std::move(counters)},
                   {"workers", std::move(workers.value())},
                   {"gateways", std::move(gateways.value())}};
  // Every queue a leader has registered, with its settings and counters.
  auto names = co_await q.registered_queues();
  if (!names) co_return with_slots(names.error());
  json::object queues;
  for (auto& name : names.value()) {
    auto one = co_await collect_queue_status(conn, k, name);
    if (!one) co_return with_slots(one.error());
    queues[name] = std::move(one.value());
  }
  out["queues"] = std::move(queues);
  // The absences held (users with no session that some queue may still abandon) and since
  // when: a queue that turns abandonment on counts only absences from then on.
  json::value since = nullptr;
  if (rs[4].value.elements.size() == 2) {
    const auto& score = rs[4].value.elements[1].str;
    long long ms = 0;
    if (std::from_chars(score.data(), score.data() + score.size(), ms).ec == std::errc{})
      since = ms;
  }
  out["presence"] = json::object{{"absent", rs[3].value.integer}, {"absent_since", since}};
  if (unserved) out["slots_without_master"] = *unserved;
  co_return out;
}

}  // namespace pushonce
