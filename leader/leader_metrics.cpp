#include "leader/leader_metrics.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>

#include "core/metrics_text.hpp"

namespace pushonce::leader {

namespace asio = boost::asio;

asio::awaitable<std::string> leader_metrics_text(redis::connection& conn, const keys& k,
                                                 const daemon_options& opts,
                                                 leader_figures own_figures) {
  const std::string own = "leader=\"" + metric_label_value(opts.id) + "\"";
  std::string out;
  out += metric_text("pushonce_leader_active", "gauge",
                     "1 while this leader holds the lease (assigns), 0 while it stands by.", own,
                     own_figures.leading ? 1 : 0);
  out += metric_text("pushonce_leader_fencing_token", "gauge",
                     "The fencing token of this leader's lease (0 while it stands by).", own,
                     static_cast<double>(own_figures.token));
  out += metric_text("pushonce_leader_assignments_total", "counter",
                     "Assignments this leader made since it started.", own,
                     static_cast<double>(own_figures.assigned));
  if (!own_figures.leading) co_return out;
  const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  const auto since = std::to_string(now - 3000);
  std::vector<redis::command> cmds{{"HGETALL", k.plain("stats")},
                                   {"ZCOUNT", k.plain("workers"), since, "+inf"},
                                   {"ZCOUNT", k.plain("gateways"), since, "+inf"},
                                   {"XLEN", k.plain("dead-letters")}};
  auto rs = co_await conn.exec_all(std::move(cmds));
  const std::string ns = "namespace=\"" + metric_label_value(k.ns()) + "\"";
  out += metric_text("pushonce_redis_up", "gauge", "1 when Redis answered this scrape.", own,
                     rs[0].ok() ? 1 : 0);
  if (!rs[0].ok()) co_return out;
  std::vector<std::pair<std::string, std::string>> stats;
  for (std::size_t i = 0; i + 1 < rs[0].value.elements.size(); i += 2)
    stats.emplace_back(rs[0].value.elements[i].str, rs[0].value.elements[i + 1].str);
  out += system_counters_text(stats, ns);
  auto count = [](const redis::result& r) {
    return r.ok() ? static_cast<double>(r.value.integer) : 0.0;
  };
  out += metric_text("pushonce_workers_alive", "gauge",
                     "Workers whose heartbeat was seen in the last 3 s.", ns, count(rs[1]));
  out += metric_text("pushonce_gateways_alive", "gauge",
                     "Gateways whose heartbeat was seen in the last 3 s.", ns, count(rs[2]));
  out += metric_text("pushonce_dead_letters", "gauge",
                     "Entries in the dead-letter stream (list, replay or purge them).", ns,
                     count(rs[3]));
  // Sweeper lag per outbox (this leader's queues, every bus shard): the age of the oldest
  // entry after the sweep cursor, 0 when none. A few leases at most while the sweepers keep
  // up; it grows while no worker sweeps.
  struct lag_outbox {
    std::string label, stream, cursor;
  };
  std::vector<lag_outbox> outboxes;
  for (const auto& q : opts.queues)
    outboxes.push_back({"q:" + q, k.queue(q, "outbox"), k.queue(q, "sweep")});
  for (unsigned n = 0; n < k.shards(); ++n)
    outboxes.push_back({"bus:" + std::to_string(n), k.bus(n, "outbox"), k.bus(n, "sweep")});
  std::vector<redis::command> cursors;
  for (const auto& o : outboxes) cursors.push_back({"GET", o.cursor});
  auto cs = co_await conn.exec_all(std::move(cursors));
  std::vector<redis::command> oldest;
  for (std::size_t i = 0; i < outboxes.size(); ++i) {
    std::string from = cs[i].ok() && !cs[i].value.is_nil() ? "(" + cs[i].value.str : "-";
    oldest.push_back({"XRANGE", outboxes[i].stream, from, "+", "COUNT", "1"});
  }
  auto os = co_await conn.exec_all(std::move(oldest));
  out +=
      "# HELP pushonce_sweeper_lag_seconds Age of the oldest outbox entry the sweepers have "
      "not passed yet (0: none).\n# TYPE pushonce_sweeper_lag_seconds gauge\n";
  for (std::size_t i = 0; i < outboxes.size(); ++i) {
    double lag = 0;
    if (os[i].ok() && !os[i].value.elements.empty()) {
      const auto& id = os[i].value.elements[0].elements.empty()
                           ? os[i].value.elements[0].str
                           : os[i].value.elements[0].elements[0].str;
      long long ms = std::atoll(id.c_str());
      if (ms > 0 && now > ms) lag = static_cast<double>(now - ms) / 1000.0;
    }
    out += fmt::format("pushonce_sweeper_lag_seconds{{{},outbox=\"{}\"}} {}\n", ns,
                       metric_label_value(outboxes[i].label), lag);
  }
  co_return out;
}

}  // namespace pushonce::leader
