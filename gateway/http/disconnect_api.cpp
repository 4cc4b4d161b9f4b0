#include "gateway/http/disconnect_api.hpp"

#include <boost/json.hpp>

#include "core/disconnect.hpp"
#include "core/log.hpp"
#include "core/names.hpp"
#include "gateway/state/gateway_state.hpp"

namespace pushonce::gateway {

namespace json = boost::json;

outcome<disconnect_body> parse_disconnect_body(std::string_view body) {
  boost::system::error_code ec;
  auto v = json::parse(body, ec);
  if (ec || !v.is_object())
    return failure{errc::bad_request, "the body must be a JSON object {\"user\":\"U\"}"};
  const auto& o = v.as_object();
  for (const auto& kv : o)
    if (kv.key() != "user" && kv.key() != "revoke")
      return failure{errc::bad_request,
                     "unknown field \"" + std::string(kv.key().substr(0, 64)) + "\""};
  auto* u = o.if_contains("user");
  if (!u || !u->is_string() || !valid_name(u->as_string()))
    return failure{errc::bad_request,
                   "\"user\" must be a user name (1-128 characters of [A-Za-z0-9._@-])"};
  disconnect_body out;
  out.user = std::string(u->as_string());
  if (auto* r = o.if_contains("revoke")) {
    if (!r->is_bool()) return failure{errc::bad_request, "\"revoke\" must be true or false"};
    out.revoke = r->as_bool();
  }
  return out;
}

std::chrono::seconds revocation_lifetime(std::chrono::seconds max_lifetime,
                                         std::chrono::seconds leeway) {
  if (max_lifetime.count() <= 0) return default_revocation_lifetime;
  auto total = max_lifetime + std::max(leeway, std::chrono::seconds(0));
  return std::min(total, std::chrono::seconds(max_revocation_lifetime));
}

std::string render_disconnect_answer(const std::string& user, long long revoked_until_ms) {
  json::object o;
  o["user"] = user;
  o["disconnected"] = true;
  if (revoked_until_ms > 0) o["revoked_until"] = revoked_until_ms;
  return json::serialize(o);
}

boost::asio::awaitable<http_response> disconnect_route(http_request& req, gateway_state& st) {
  auto body = parse_disconnect_body(req.body());
  if (!body) co_return error_response(body.error().code, body.error().message, req.version());
  auto lifetime = revocation_lifetime(st.settings.jwt.max_lifetime, st.settings.jwt.leeway);
  std::string user = body.value().user;
  auto done = co_await disconnect_user(st.conn, st.keys, std::move(user), body.value().revoke,
                                       lifetime, st.settings.retention);
  if (!done) {
    auto f = done.error();
    if (f.code != errc::bad_request) log::warn("http: /api/disconnect: {}", f.message);
    co_return error_response(f.code, f.message, req.version());
  }
  log::info("http: /api/disconnect: {}{} ({} gateways heard it)", body.value().user,
            body.value().revoke ? " revoked" : "", done.value().receivers);
  co_return json_response(200, render_disconnect_answer(body.value().user, done.value().until_ms),
                          req.version());
}

}  // namespace pushonce::gateway
