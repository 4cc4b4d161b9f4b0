#include "gateway/http_routes.hpp"

#include "core/log.hpp"
#include "gateway/gateway_state.hpp"
#include "gateway/publish_api.hpp"

namespace pushonce::gateway {

namespace asio = boost::asio;
namespace http = boost::beast::http;

namespace {

// Equal strings, in a time that does not depend on where they differ.
bool same_secret(std::string_view a, std::string_view b) {
  if (a.size() != b.size() || b.empty()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

asio::awaitable<http_response> healthz(http_request& req, gateway_state& st) {
  redis::command ping{"PING"};
  auto r = co_await st.health_conn->exec(std::move(ping));
  if (r.ok()) co_return text_response(200, "ok", "text/plain", req.version());
  co_return text_response(503, "unavailable", "text/plain", req.version());
}

std::optional<http_response> publish_auth(const http_request& req, const gateway_state& st) {
  if (!st.settings.api_key)
    return json_response(403, error_json("forbidden", "PUSHONCE_API_KEY is not configured"),
                         req.version());
  std::string_view auth = req[http::field::authorization];
  constexpr std::string_view bearer = "Bearer ";
  if (auth.size() <= bearer.size() || auth.substr(0, bearer.size()) != bearer ||
      !same_secret(auth.substr(bearer.size()), *st.settings.api_key))
    return json_response(401, error_json("unauthorized", "missing or wrong API key"),
                         req.version());
  return std::nullopt;
}

asio::awaitable<http_response> publish(http_request& req, gateway_state& st) {
  auto body = parse_publish_body(req.body());
  if (!body) co_return json_response(400, error_json("bad_request", body.error().message), req.version());
  auto requests = body.value().requests;
  auto results = co_await st.pub->publish_batch(std::move(requests));
  auto answer = render_publish_results(body.value(), results);
  if (answer.status >= 500) log::warn("http: /api/publish: {} {}", answer.status, answer.body);
  co_return json_response(answer.status, std::move(answer.body), req.version());
}

}  // namespace

const std::vector<http_route>& http_routes() {
  static const std::vector<http_route> table{
      {http::verb::get, "/healthz", {}, healthz},
      {http::verb::head, "/healthz", {}, healthz},
      {http::verb::post, "/api/publish", publish_auth, publish},
  };
  return table;
}

const http_route* find_route(http::verb method, std::string_view path) {
  for (const auto& r : http_routes())
    if (r.method == method && r.path == path) return &r;
  return nullptr;
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
  return json_response(404, error_json("not_found", "no route for " + what), req.version());
}

std::string_view target_path(std::string_view target) {
  auto q = target.find('?');
  return q == std::string_view::npos ? target : target.substr(0, q);
}

}  // namespace pushonce::gateway
