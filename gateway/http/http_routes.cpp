#include "gateway/http/http_routes.hpp"

#include <malloc.h>

#include <boost/json.hpp>
#include <boost/url/parse.hpp>

#include "core/log.hpp"
#include "core/lua/rate_limit.hpp"
#include "core/metrics_text.hpp"
#include "core/queue_api.hpp"
#include "core/redis/cluster_health.hpp"
#include "core/status.hpp"
#include "gateway/http/disconnect_api.hpp"
#include "gateway/http/http_error.hpp"
#include "gateway/http/publish_api.hpp"
#include "gateway/http/queue_control.hpp"
#include "gateway/http/web_assets.hpp"
#include "gateway/server/gateway_state.hpp"
#include "gateway/server/readiness.hpp"
#include "gateway/session/sse_session.hpp"

namespace pushonce::gateway {

namespace asio = boost::asio;
namespace http = boost::beast::http;

namespace {

// Equal strings, in a time that does not depend on where they differ.
bool same_secret(std::string_view a, std::string_view b) {
  if (a.size() != b.size() || b.empty()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

// Redis answered a PING within the last second (probe_cache: a flood of /healthz runs at
// most one PING a second).
asio::awaitable<bool> redis_answers(gateway_state& st) {
  if (auto cached = st.health_cache.lookup()) co_return *cached;
  redis::command ping{"PING"};
  auto r = co_await st.health_conn->exec(std::move(ping));
  st.health_cache.store(r.ok());
  co_return r.ok();
}

asio::awaitable<http_response> healthz(http_request& req, gateway_state& st) {
  auto up = co_await redis_answers(st);
  if (up) co_return text_response(200, "ok", "text/plain", req.version());
  co_return text_response(503, "unavailable", "text/plain", req.version());
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

// GET /readyz: Redis answers and accepts writes, the subscribers are connected, and not
// draining; the body says why not.
asio::awaitable<http_response> readyz(http_request& req, gateway_state& st) {
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

// A route guarded by a shared secret: 403 when the secret is not configured (its
// variable is named), 401 unless the request carries "Authorization: Bearer <secret>", 429
// (the secret not compared) for an address with too many failures (auth_failures).
std::optional<http_response> bearer_check(const http_request& req, gateway_state& st,
                                          const std::string& client,
                                          const std::optional<std::string>& secret,
                                          const char* env_name, const char* what,
                                          const std::optional<std::string>& previous = {}) {
  if (!secret)
    return error_response(errc::forbidden, std::string(env_name) + " is not configured",
                          req.version());
  if (auto wait = st.bearer_failures.blocked(client)) {
    ++st.metrics.bearer_blocked;
    auto res = error_response(
        errc::rate_limited,
        fmt::format("too many wrong {}s from this address; retry after {} s", what, wait->count()),
        req.version());
    res.set(http::field::retry_after, std::to_string(wait->count()));
    return res;
  }
  std::string_view auth = req[http::field::authorization];
  constexpr std::string_view bearer = "Bearer ";
  if (auth.size() <= bearer.size() || auth.substr(0, bearer.size()) != bearer ||
      (!same_secret(auth.substr(bearer.size()), *secret) &&
       !(previous && same_secret(auth.substr(bearer.size()), *previous)))) {
    ++st.metrics.bearer_failures;
    st.bearer_failures.failed(client);
    std::uint64_t dropped = 0;
    if (st.bearer_failures.may_log(dropped))
      log::warn(log::fields{{"client", client}, {"dropped", dropped}},
                "http: {} {}: missing or wrong {}", std::string(req.method_string()),
                std::string(target_path(req.target()).substr(0, 200)), what);
    return error_response(errc::unauthorized, std::string("missing or wrong ") + what,
                          req.version());
  }
  return std::nullopt;
}

std::optional<http_response> publish_auth(const http_request& req, gateway_state& st,
                                          const std::string& client) {
  return bearer_check(req, st, client, st.settings.api_key, "PUSHONCE_API_KEY", "API key",
                      st.settings.api_key_previous);
}

std::optional<http_response> admin_auth(const http_request& req, gateway_state& st,
                                        const std::string& client) {
  return bearer_check(req, st, client, st.settings.admin_token, "PUSHONCE_ADMIN_TOKEN", "token");
}

// --metrics-auth: /metrics wants the admin token too.
std::optional<http_response> metrics_auth(const http_request& req, gateway_state& st,
                                          const std::string& client) {
  if (!st.settings.metrics_auth) return std::nullopt;
  return admin_auth(req, st, client);
}

// GET /, /pushonce.js, /admin: the embedded browser files.
asio::awaitable<http_response> static_asset(http_request& req, gateway_state&) {
  auto* a = find_web_asset(target_path(req.target()));
  if (!a) co_return not_found_response(req);
  auto res = text_response(200, std::string(a->body), a->content_type, req.version());
  res.set(http::field::cache_control, "no-cache");
  co_return res;
}

// GET /api/status[?queue=Q]: what `pushonce-leader status --json` prints (admin dashboard).
asio::awaitable<http_response> status(http_request& req, gateway_state& st) {
  std::string queue = "default";
  auto url = boost::urls::parse_origin_form(req.target());
  if (url) {
    auto params = url->params();
    if (auto it = params.find("queue"); it != params.end() && (*it).has_value)
      queue = std::string((*it).value);
  }
  auto s = co_await collect_status(st.conn, st.keys, queue);
  if (!s) {
    // A bad queue name is the caller's; anything else (Redis down, refusing, answering
    // oddly) makes the status unavailable for now.
    auto f = s.error();
    auto e = f.code == errc::bad_request ? errc::bad_request : errc::redis_unavailable;
    co_return error_response(e, f.message, req.version());
  }
  co_return json_response(200, boost::json::serialize(s.value()), req.version());
}

// POST /api/queue-control: a queue's settings changed from the admin dashboard
// (gateway/http/queue_control); the answer is the settings object.
asio::awaitable<http_response> queue_control_route(http_request& req, gateway_state& st) {
  auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                 std::chrono::system_clock::now().time_since_epoch())
                 .count();
  auto call = parse_queue_control(req.body(), now);
  if (!call) co_return error_response(call.error().code, call.error().message, req.version());
  queue_api api(st.conn, st.keys);
  auto r = co_await api.settings(call.value());
  if (!r) {
    auto f = r.error();
    auto e =
        f.code == errc::bad_request || f.code == errc::not_found ? f.code : errc::redis_unavailable;
    co_return error_response(e, f.message, req.version());
  }
  auto o = render_queue_settings(call.value().queue, r.value().settings,
                                 r.value().default_accept_timeout_ms);
  log::info("http: /api/queue-control: queue {}: {}", call.value().queue,
            boost::json::serialize(o));
  co_return json_response(200, boost::json::serialize(o), req.version());
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
      {"pushonce_queue_abandoned_total", "counter", "Waiting users removed as abandoned.", {}}};
  for (const auto& q : names.value()) {
    auto s = co_await collect_queue_status(st.health_conn, st.keys, q);
    if (!s) continue;
    const auto& o = s.value();
    auto num = [&](const char* k) { return boost::json::serialize(o.at(k)); };
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
  }
  for (auto& f : fams)
    if (!f.lines.empty())
      out += fmt::format("# HELP {} {}\n# TYPE {} {}\n{}", f.name, f.help, f.name, f.type, f.lines);
  co_return out;
}

// GET /metrics: Prometheus text format. This gateway's own counters, and the system's
// counters from NS:stats (the same on every gateway: the active leader's /metrics is the
// one copy to aggregate; docs/operations.md "Monitoring a drop").
asio::awaitable<http_response> metrics(http_request& req, gateway_state& st) {
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

// The API key's token bucket (one token per request), taken by the publish itself
// (publisher::publish_checked); std::nullopt when there is no limit.
std::optional<lua::publish_rate> publish_rate_of(const gateway_state& st) {
  const auto& s = st.settings;
  if (s.publish_rate <= 0 || !s.api_key) return std::nullopt;
  return lua::publish_rate{lua::rate_limit_key(st.keys, "api", *s.api_key),
                           static_cast<long long>(s.publish_rate),
                           static_cast<long long>(s.publish_burst)};
}

http_response rate_limited(const http_request& req, gateway_state& st,
                           std::chrono::milliseconds wait) {
  ++st.metrics.api_rate_limited;
  auto secs = std::max<long long>((wait.count() + 999) / 1000, 1);
  auto res = error_response(
      errc::rate_limited,
      "over the API key's rate limit; retry after " + std::to_string(secs) + " s", req.version());
  res.set(http::field::retry_after, std::to_string(secs));
  return res;
}

asio::awaitable<http_response> publish(http_request& req, gateway_state& st) {
  auto body = parse_publish_body(req.body(), st.settings.max_data_bytes);
  if (!body) {
    auto f = body.error();  // bad_request (400) or too_large (413)
    co_return error_response(f.code, f.message, req.version());
  }
  auto requests = body.value().requests;
  auto received = requests.size();
  auto checked = co_await st.pub->publish_checked(std::move(requests), publish_rate_of(st));
  if (checked.limited) co_return rate_limited(req, st, *checked.limited);
  st.metrics.api_messages += received;
  auto answer = render_publish_results(body.value(), checked.results);
  // 207: a batch across bus shards published in part (a shard's call failed).
  if (answer.status >= 500 || answer.status == 207)
    log::warn("http: /api/publish: {} {}", answer.status, answer.body);
  auto res = json_response(answer.status, std::move(answer.body), req.version());
  // Redis unreachable or refusing work (OOM, BUSY, MISCONF, no master): try again shortly.
  if (answer.retry) res.set(http::field::retry_after, "1");
  co_return res;
}

asio::awaitable<http_response> admission_jwks(http_request& req, gateway_state& st) {
  auto res = json_response(200, st.settings.admission_jwks, req.version());
  res.set(http::field::cache_control, "public, max-age=300");
  co_return res;
}

// One HGET of the queue's admission record; the id's queue comes from the source index
// (read from Redis once, again when an index is new to this gateway).
asio::awaitable<http_response> admission_state(http_request& req, gateway_state& st) {
  auto id = admission_id_of_path(target_path(req.target()));
  if (!id) co_return error_response(errc::not_found, "no such admission", req.version());
  const long long source = ::pushonce::admission::source_of_id(*id);
  auto queue = st.admission_queues.queue_of(source);
  if (!queue) {
    auto sources = co_await st.queues->source_queues();
    if (!sources)
      co_return error_response(sources.error().code, sources.error().message, req.version());
    st.admission_queues.set(std::move(sources.value()));
    queue = st.admission_queues.queue_of(source);
    if (!queue) co_return error_response(errc::not_found, "no such admission", req.version());
  }
  std::string q = *queue;
  std::string key = *id;
  auto rec = co_await st.queues->admission_record(std::move(q), std::move(key));
  if (!rec) co_return error_response(rec.error().code, rec.error().message, req.version());
  if (!rec.value()) co_return error_response(errc::not_found, "no such admission", req.version());
  co_return json_response(200, admission_state_json(*id, *queue, *rec.value()), req.version());
}

}  // namespace

const std::vector<http_route>& http_routes() {
  static const std::vector<http_route> table{
      {http::verb::get, "/healthz", {}, healthz},
      {http::verb::head, "/healthz", {}, healthz},
      {http::verb::get, "/readyz", {}, readyz},
      {http::verb::head, "/readyz", {}, readyz},
      {http::verb::post, "/api/publish", publish_auth, publish, true},
      {http::verb::post, "/api/disconnect", publish_auth, disconnect_route, true},
      {http::verb::get, "/.well-known/jwks.json", {}, admission_jwks},
      {http::verb::get, "/api/admission/", publish_auth, admission_state},
      {http::verb::get, "/api/status", admin_auth, status},
      {http::verb::post, "/api/queue-control", admin_auth, queue_control_route, true},
      {http::verb::get, "/metrics", metrics_auth, metrics},
      {http::verb::post, "/sse/op", {}, sse_op_route, true},
      {http::verb::get, "/", {}, static_asset},
      {http::verb::head, "/", {}, static_asset},
      {http::verb::head, "/pushonce.js", {}, static_asset},
      {http::verb::get, "/index.html", {}, static_asset},
      {http::verb::get, "/pushonce.js", {}, static_asset},
      {http::verb::get, "/admin", {}, static_asset},
      {http::verb::get, "/admin.html", {}, static_asset},
  };
  return table;
}

const http_route* find_route(http::verb method, std::string_view path) {
  for (const auto& r : http_routes()) {
    if (r.method != method) continue;
    // A path ending in '/' is a prefix: /api/admission/ID.
    if (r.path == path || (r.path.size() > 1 && r.path.back() == '/' &&
                           path.size() > r.path.size() && path.substr(0, r.path.size()) == r.path))
      return &r;
  }
  return nullptr;
}

http_response error_response(errc e, std::string_view message, unsigned version) {
  auto a = error_answer(e, message);
  return json_response(a.status, std::move(a.body), version);
}

http_response json_response(unsigned status, std::string body, unsigned version) {
  return text_response(status, std::move(body), "application/json", version);
}

http_response text_response(unsigned status, std::string body, std::string_view content_type,
                            unsigned version) {
  http_response res{static_cast<http::status>(status), version};
  res.set(http::field::server, "pushonce-gateway");
  res.set(http::field::content_type, content_type);
  res.set(http::field::cache_control, "no-store");
  res.body() = std::move(body);
  res.prepare_payload();
  return res;
}

http_response not_found_response(const http_request& req) {
  std::string what = std::string(req.method_string()) + " " +
                     std::string(target_path(req.target()).substr(0, 200));
  return error_response(errc::not_found, "no route for " + what, req.version());
}

std::string_view target_path(std::string_view target) {
  auto q = target.find('?');
  return q == std::string_view::npos ? target : target.substr(0, q);
}

}  // namespace pushonce::gateway
