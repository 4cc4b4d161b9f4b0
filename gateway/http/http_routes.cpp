#include "gateway/http/http_routes.hpp"

#include <boost/json.hpp>
#include <boost/url/parse.hpp>

#include "core/json_text.hpp"
#include "core/log.hpp"
#include "core/lua/rate_limit.hpp"
#include "core/queue_api.hpp"
#include "core/status.hpp"
#include "gateway/auth/auth_failures.hpp"
#include "gateway/http/admission_api.hpp"
#include "gateway/http/disconnect_api.hpp"
#include "gateway/http/gate_routes.hpp"
#include "gateway/http/poll_routes.hpp"
#include "gateway/http/probe_routes.hpp"
#include "gateway/http/publish_api.hpp"
#include "gateway/http/queue_control.hpp"
#include "gateway/http/web_assets.hpp"
#include "gateway/session/sse_session.hpp"
#include "gateway/state/gateway_state.hpp"

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
  if (auto wait = st.bearer_failures->blocked(client)) {
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
    st.bearer_failures->failed(client);
    std::uint64_t dropped = 0;
    if (st.bearer_failures->may_log(dropped))
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
  co_return json_response(200, json_text(s.value()), req.version());
}

// POST /api/queue-control: a queue's settings changed from the admin dashboard
// (gateway/http/queue_control); the answer is the settings object.
asio::awaitable<http_response> queue_control_route(http_request& req, gateway_state& st) {
  auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                 std::chrono::system_clock::now().time_since_epoch())
                 .count();
  auto call = parse_queue_control(req.body(), now);
  if (!call) co_return error_response(call.error().code, call.error().message, req.version());
  auto r = co_await st.queues->settings(call.value());
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
  co_return json_response(200, json_text(o), req.version());
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

// The queue of admission `id`: from its source index (read from Redis once, again when an
// index is new to this gateway); std::nullopt when none.
asio::awaitable<outcome<std::optional<std::string>>> admission_queue(gateway_state& st,
                                                                     const std::string& id) {
  const long long source = ::pushonce::admission::source_of_id(id);
  auto queue = st.admission_queues->queue_of(source);
  if (!queue) {
    auto sources = co_await st.queues->source_queues();
    if (!sources) co_return sources.error();
    st.admission_queues->set(std::move(sources.value()));
    queue = st.admission_queues->queue_of(source);
  }
  co_return queue;
}

// POST /api/admission/ID/renew | /release (docs/capacity.md): the state object; a renewal
// of an ended admission answers 409 {"error":"expired"|"released"}; release is idempotent.
asio::awaitable<http_response> admission_action_route(http_request& req, gateway_state& st) {
  auto action = admission_action_of_path(target_path(req.target()));
  if (!action) co_return error_response(errc::not_found, "no such admission", req.version());
  auto queue = co_await admission_queue(st, action->id);
  if (!queue) co_return error_response(queue.error().code, queue.error().message, req.version());
  if (!queue.value()) co_return error_response(errc::not_found, "no such admission", req.version());
  std::string q = *queue.value();
  std::string id = action->id;
  if (action->renew) {
    auto r = co_await st.queues->renew_admission(std::move(q), std::move(id));
    if (!r) co_return error_response(r.error().code, r.error().message, req.version());
    co_return json_response(200, admission_state_json(action->id, *queue.value(), r.value()),
                            req.version());
  }
  auto r = co_await st.queues->release_admission(std::move(q), std::move(id));
  if (!r) co_return error_response(r.error().code, r.error().message, req.version());
  ::pushonce::admission::record rec{r.value().state, r.value().user, r.value().resource};
  co_return json_response(200, admission_state_json(action->id, *queue.value(), rec),
                          req.version());
}

// One HGET of the queue's admission record; the id's queue comes from the source index
// (read from Redis once, again when an index is new to this gateway).
asio::awaitable<http_response> admission_state(http_request& req, gateway_state& st) {
  auto id = admission_id_of_path(target_path(req.target()));
  if (!id) co_return error_response(errc::not_found, "no such admission", req.version());
  const long long source = ::pushonce::admission::source_of_id(*id);
  auto queue = st.admission_queues->queue_of(source);
  if (!queue) {
    auto sources = co_await st.queues->source_queues();
    if (!sources)
      co_return error_response(sources.error().code, sources.error().message, req.version());
    st.admission_queues->set(std::move(sources.value()));
    queue = st.admission_queues->queue_of(source);
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
      {http::verb::get, "/healthz", {}, healthz_route},
      {http::verb::head, "/healthz", {}, healthz_route},
      {http::verb::get, "/readyz", {}, readyz_route},
      {http::verb::head, "/readyz", {}, readyz_route},
      {http::verb::post, "/api/publish", publish_auth, publish, true},
      {http::verb::post, "/api/disconnect", publish_auth, disconnect_route, true},
      {http::verb::get, "/.well-known/jwks.json", {}, admission_jwks},
      {http::verb::get, "/api/admission/", publish_auth, admission_state},
      {http::verb::post, "/api/admission/", publish_auth, admission_action_route, true},
      {http::verb::get, "/api/gate", gate_precheck, gate_route},
      {http::verb::get, "/api/queue/", {}, poll_route},
      {http::verb::post, "/api/queue/", {}, poll_route, true},
      {http::verb::post, "/api/gate/cookie", {}, gate_cookie_route, true},
      {http::verb::get, "/api/status", admin_auth, status},
      {http::verb::post, "/api/queue-control", admin_auth, queue_control_route, true},
      {http::verb::get, "/metrics", metrics_auth, metrics_route},
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

}  // namespace pushonce::gateway
