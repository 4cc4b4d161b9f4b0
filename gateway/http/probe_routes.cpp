// The probe routes: GET /healthz (Redis answers), GET /readyz (readiness) and GET /metrics
// (this gateway's counters and the system's, Prometheus text); each one's Redis part is
// answered from a probe_cache (docs/security.md).
#include "gateway/http/probe_routes.hpp"

#include <fmt/format.h>
#include <malloc.h>

#include <boost/json.hpp>

#include "core/json_text.hpp"
#include "core/metrics_text.hpp"
#include "core/queue_api.hpp"
#include "core/redis/cluster_health.hpp"
#include "core/status.hpp"
#include "gateway/http/readiness.hpp"
#include "gateway/state/gateway_state.hpp"

namespace pushonce::gateway {

namespace asio = boost::asio;
namespace http = boost::beast::http;

namespace {

// Redis answered a PING within the last second (probe_cache: a flood of /healthz runs at
// most one PING a second).
asio::awaitable<bool> redis_answers(gateway_state& st) {
  if (auto cached = st.health_cache.lookup()) co_return *cached;
  redis::command ping{"PING"};
  auto r = co_await st.health_conn->exec(std::move(ping));
  st.health_cache.store(r.ok());
  co_return r.ok();
}

// /readyz's Redis probe: a tiny key written with a short TTL, so that a Redis that answers
// PING but refuses writes (OOM at maxmemory, MISCONF after failed saves, a read-only
// replica) makes the gateway not ready too. Cached for a second like /healthz's PING.
asio::awaitable<redis_write_probe> redis_accepts_writes(gateway_state& st) {
  if (auto cached = st.ready_cache.lookup()) co_return *cached;
  redis::command set{"SET", st.keys.plain("ready:" + st.settings.id), "1", "PX", "5000"};
  auto r = co_await st.health_conn->exec(std::move(set));
  redis_write_probe p;
  p.answered = !r.ec;
  p.writable = r.ok();
  if (r.ec)
    p.error = r.ec.message();
  else if (r.value.is_error())
    p.error = r.value.str;
  if (st.health_conn->is_cluster()) {
    redis::command nodes{"CLUSTER", "NODES"};
    auto n = co_await st.health_conn->exec(std::move(nodes));
    if (auto ranges = n.ok() ? redis::slots_without_master(n.value.str) : std::nullopt)
      p.slots_without_master = redis::to_string(*ranges);
  }
  st.ready_cache.store(p);
  co_return p;
}

// Per-queue gauges and counters for every registered queue (NS:queues): what `status`
// shows under "queues".
asio::awaitable<std::string> queue_metrics(gateway_state& st) {
  queue_api api(st.health_conn, st.keys);
  auto names = co_await api.registered_queues();
  if (!names) co_return std::string{};
  std::string out;
  struct family {
    const char* name;
    const char* type;
    const char* help;
    std::string lines;
  };
  std::vector<family> fams{
      {"pushonce_queue_waiting", "gauge", "Users waiting in the queue.", {}},
      {"pushonce_queue_prequeue", "gauge", "Users in the queue's pre-queue.", {}},
      {"pushonce_queue_paused", "gauge", "1 while assigning is paused.", {}},
      {"pushonce_queue_closed", "gauge", "1 while new joins are refused.", {}},
      {"pushonce_queue_assignments_per_minute",
       "gauge",
       "Assignments per minute over the recent window.",
       {}},
      {"pushonce_queue_joins_refused_total", "counter", "Joins refused, by reason.", {}},
      {"pushonce_queue_abandoned_total", "counter", "Waiting users removed as abandoned.", {}},
      {"pushonce_queue_active", "gauge", "Live admissions (assigned or accepted).", {}},
      {"pushonce_queue_max_active", "gauge", "The queue's --max-active (0 = no cap).", {}},
      {"pushonce_queue_rate_per_min", "gauge", "The queue's --rate (0 = no pacing).", {}}};
  for (const auto& q : names.value()) {
    auto s = co_await collect_queue_status(st.health_conn, st.keys, q);
    if (!s) continue;
    const auto& o = s.value();
    auto num = [&](const char* k) { return json_text(o.at(k)); };
    auto label = fmt::format("{{queue=\"{}\"}}", q);
    fams[0].lines += fmt::format("pushonce_queue_waiting{} {}\n", label, num("length"));
    fams[1].lines += fmt::format("pushonce_queue_prequeue{} {}\n", label, num("prequeue_length"));
    fams[2].lines +=
        fmt::format("pushonce_queue_paused{} {}\n", label, o.at("paused").as_bool() ? 1 : 0);
    fams[3].lines +=
        fmt::format("pushonce_queue_closed{} {}\n", label, o.at("state") == "closed" ? 1 : 0);
    fams[4].lines += fmt::format("pushonce_queue_assignments_per_minute{} {}\n", label,
                                 num("assignment_rate_per_min"));
    for (auto [reason, field] :
         {std::pair{"closed", "refused_closed"}, std::pair{"full", "refused_full"},
          std::pair{"pow", "refused_pow"}})
      fams[5].lines +=
          fmt::format("pushonce_queue_joins_refused_total{{queue=\"{}\",reason=\"{}\"}} {}\n", q,
                      reason, num(field));
    fams[6].lines += fmt::format("pushonce_queue_abandoned_total{} {}\n", label, num("abandoned"));
    fams[7].lines += fmt::format("pushonce_queue_active{} {}\n", label, num("active"));
    fams[8].lines += fmt::format("pushonce_queue_max_active{} {}\n", label, num("max_active"));
    fams[9].lines += fmt::format("pushonce_queue_rate_per_min{} {}\n", label, num("rate_per_min"));
  }
  for (auto& f : fams)
    if (!f.lines.empty())
      out += fmt::format("# HELP {} {}\n# TYPE {} {}\n{}", f.name, f.help, f.name, f.type, f.lines);
  co_return out;
}

}  // namespace

asio::awaitable<http_response> healthz_route(http_request& req, gateway_state& st) {
  auto up = co_await redis_answers(st);
  if (up) co_return text_response(200, "ok", "text/plain", req.version());
  co_return text_response(503, "unavailable", "text/plain", req.version());
}

// GET /readyz: Redis answers and accepts writes, the subscribers are connected, and not
// draining; the body says why not.
asio::awaitable<http_response> readyz_route(http_request& req, gateway_state& st) {
  auto probe = co_await redis_accepts_writes(st);
  readiness_inputs in;
  in.redis_ok = probe.answered;
  in.writable = probe.writable;
  in.redis_error = probe.error;
  in.slots_without_master = probe.slots_without_master;
  in.subscribed = st.sub && st.sub->connected();
  in.draining = st.draining.load();
  if (st.sharded) in.sharded = st.sharded->connected();
  auto a = judge_readiness(in);
  auto res = json_response(a.status, std::move(a.body), req.version());
  if (a.status == 503) res.set(http::field::retry_after, "1");
  co_return res;
}

// GET /metrics: Prometheus text format. This gateway's own counters, and the system's
// counters from NS:stats (the same on every gateway: the active leader's /metrics is the
// one copy to aggregate; docs/operations.md "Monitoring a drop").
asio::awaitable<http_response> metrics_route(http_request& req, gateway_state& st) {
  std::string out;
  const auto& id = st.settings.id;
  auto metric = [&](const char* name, const char* type, const char* help, auto value) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n{}{{gateway=\"{}\"}} {}\n", name, help, name,
                       type, name, id, value);
  };
  const auto& m = st.metrics;
  metric("pushonce_gateway_sessions", "gauge", "WebSocket sessions open on this gateway.",
         st.registry.size());
  metric("pushonce_gateway_users", "gauge", "Users with a session on this gateway.",
         st.registry.users());
  metric("pushonce_gateway_sessions_opened_total", "counter", "Sessions that completed hello.",
         m.sessions_opened.load());
  metric("pushonce_gateway_auth_failures_total", "counter", "Hellos refused (closed 1008).",
         m.auth_failures.load());
  metric("pushonce_gateway_frames_sent_total", "counter", "WebSocket frames written.",
         m.frames_sent.load());
  metric("pushonce_gateway_slow_consumer_closes_total", "counter",
         "Sessions closed 1013 because their send queue was full.", m.slow_consumer_closes.load());
  metric("pushonce_gateway_epoch_rotations_total", "counter",
         "Hellos whose since offset was beyond the user's offset counter (a failover lost "
         "deliveries): a new epoch, recovered false.",
         m.epoch_rotations.load());
  metric("pushonce_gateway_offset_regression_closes_total", "counter",
         "Sessions closed 1013 because the user's offsets went back (failover).",
         m.offset_regression_closes.load());
  metric("pushonce_gateway_catch_up_gap_closes_total", "counter",
         "Sessions closed 1013 because the next offset could not be sent (trimmed from the "
         "inbox, or the inbox unreadable during a catch-up): they resume.",
         m.catch_up_gap_closes.load());
  metric("pushonce_gateway_token_refreshes_total", "counter",
         "refresh ops accepted (the session follows the new token's exp).",
         m.token_refreshes.load());
  metric("pushonce_gateway_token_refresh_refusals_total", "counter",
         "refresh ops refused (the token did not verify or named another user).",
         m.token_refresh_refusals.load());
  metric("pushonce_gateway_token_expiry_closes_total", "counter",
         "Sessions closed 1008 \"token expired\" (exp + --jwt-leeway passed without a refresh).",
         m.token_expiry_closes.load());
  metric("pushonce_gateway_http_requests_total", "counter", "HTTP requests served.",
         m.http_requests.load());
  metric("pushonce_gateway_api_messages_total", "counter", "Messages received on /api/publish.",
         m.api_messages.load());
  // mallinfo2 walks every malloc arena under its lock: at most once a second (probe_cache).
  auto heap = st.heap_cache.lookup();
  if (!heap) {
    auto m2 = mallinfo2();
    heap = m2.uordblks + m2.hblkhd;
    st.heap_cache.store(*heap);
  }
  metric("pushonce_gateway_heap_in_use_bytes", "gauge",
         "Heap bytes allocated and not freed (glibc mallinfo2 uordblks + hblkhd; cached 1 s).",
         *heap);
  metric("pushonce_gateway_connections_refused_total", "counter",
         "Connections answered 503 over --max-connections, --max-connections-per-ip or "
         "--max-sessions-per-ip.",
         m.connections_refused.load());
  metric("pushonce_gateway_sessions_refused_total", "counter",
         "Sessions closed 1008 over --max-sessions-per-user.", m.sessions_refused.load());
  metric("pushonce_gateway_rate_limited_frames_total", "counter",
         "Client frames answered rate_limited.", m.rate_limited_frames.load());
  metric("pushonce_gateway_rate_limit_closes_total", "counter",
         "Sessions closed 1008 for going on over the frame rate.", m.rate_limit_closes.load());
  metric("pushonce_gateway_bearer_failures_total", "counter",
         "Requests refused 401 for a missing or wrong API key or admin token.",
         m.bearer_failures.load());
  metric("pushonce_gateway_bearer_blocked_total", "counter",
         "Requests answered 429 because their address had too many such failures.",
         m.bearer_blocked.load());
  metric("pushonce_gateway_api_rate_limited_total", "counter",
         "/api/publish requests answered 429.", m.api_rate_limited.load());
  metric("pushonce_gateway_close_deadline_drops_total", "counter",
         "Closing sessions dropped because the peer did not read.", m.close_deadline_drops.load());
  // The Redis part (HGETALL of the counters) at most once a second (probe_cache).
  auto cached = st.stats_cache.lookup();
  if (!cached) {
    redis::command stats{"HGETALL", st.keys.plain("stats")};
    auto r = co_await st.health_conn->exec(std::move(stats));
    std::string part = fmt::format(
        "# HELP pushonce_redis_up 1 when Redis answered (cached 1 s).\n"
        "# TYPE pushonce_redis_up gauge\npushonce_redis_up{{gateway=\"{}\"}} {}\n",
        id, r.ok() ? 1 : 0);
    if (r.ok()) {  // every known counter, 0 before Redis has it (core/metrics_text)
      std::vector<std::pair<std::string, std::string>> stats;
      for (std::size_t i = 0; i + 1 < r.value.elements.size(); i += 2)
        stats.emplace_back(r.value.elements[i].str, r.value.elements[i + 1].str);
      part += system_counters_text(stats, "");
    }
    if (r.ok()) part += co_await queue_metrics(st);
    st.stats_cache.store(part);
    cached = std::move(part);
  }
  out += *cached;
  co_return text_response(200, std::move(out), "text/plain; version=0.0.4", req.version());
}

}  // namespace pushonce::gateway
