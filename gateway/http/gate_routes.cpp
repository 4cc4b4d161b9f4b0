#include "gateway/http/gate_routes.hpp"

#include <boost/json.hpp>
#include <boost/url/parse.hpp>
#include <chrono>

#include "core/log.hpp"
#include "core/names.hpp"
#include "core/queue_api.hpp"
#include "core/use_tuple.hpp"
#include "gateway/http/gate.hpp"
#include "gateway/state/gateway_state.hpp"

namespace pushonce::gateway {

namespace asio = boost::asio;
namespace http = boost::beast::http;

namespace {

long long wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string query_param(std::string_view target, std::string_view name) {
  auto url = boost::urls::parse_origin_form(target);
  if (!url) return {};
  auto params = url->params();
  auto it = params.find(name);
  if (it == params.end() || !(*it).has_value) return {};
  return std::string((*it).value);
}

http_response gate_refusal(unsigned status, const std::string& error, const std::string& why,
                           unsigned version) {
  boost::json::object o{{"error", error}, {"message", why}};
  return json_response(status, boost::json::serialize(o), version);
}

// The renewals the checks of the last second asked for, one batch (a failed renewal is
// asked again by the next check).
asio::awaitable<void> flush_renewals(
    gateway_state& st,
    std::vector<std::pair<std::pair<std::string, std::string>, long long>> batch) {
  for (auto& [key, at] : batch) {
    std::string queue = key.first, id = key.second;
    auto r = co_await st.queues->renew_admission(std::move(queue), std::move(id), at);
    if (!r && r.error().code == errc::redis_unavailable)
      log::warn("gate: renewal of {} failed: {}", key.second, r.error().message);
  }
}

}  // namespace

std::optional<http_response> gate_precheck(const http_request& req, gateway_state& st,
                                           const std::string& client) {
  auto token = req.method() == http::verb::post
                   ? std::optional<std::string>()
                   : gate_token_of(req[http::field::cookie], req[http::field::authorization]);
  if (!token || !st.settings.admission_verifier) return std::nullopt;  // answered by the route
  if (st.gate->tokens.cached(*token)) return std::nullopt;             // verified before: no cost
  if (auto wait = st.gate->bad_tokens.blocked(client)) {
    // 401, not 429: nginx's auth_request takes any other answer for a failure of the gate,
    // which a fail-open deployment lets through.
    auto res = gate_refusal(401, "rate_limited",
                            "too many invalid admission tokens from this address", req.version());
    res.set(http::field::retry_after, std::to_string(wait->count()));
    return res;
  }
  if (!st.gate->tokens.claims_of(*token, *st.settings.admission_verifier)) {
    st.gate->bad_tokens.failed(client);
    return gate_refusal(401, "unauthorized", "the admission token is not valid", req.version());
  }
  return std::nullopt;
}

asio::awaitable<http_response> gate_route(http_request& req, gateway_state& st) {
  const auto version = req.version();
  const std::string queue = query_param(req.target(), "queue");
  if (!valid_name(queue))
    co_return gate_refusal(400, "bad_request", "?queue= must name a queue", version);
  auto token = gate_token_of(req[http::field::cookie], req[http::field::authorization]);
  if (!token) co_return gate_refusal(401, "unauthorized", "no admission token", version);
  if (!st.settings.admission_verifier)
    co_return gate_refusal(401, "unauthorized", "no admission keys", version);
  auto claims = st.gate->tokens.claims_of(*token, *st.settings.admission_verifier);
  if (!claims || claims->iss != st.settings.admission_issuer)
    co_return gate_refusal(401, "unauthorized", "the admission token is not valid", version);
  const auto now = gate_states::clock::now();
  auto cached = st.gate->states.fresh(claims->jti, now);
  std::optional<admission::record> state;
  if (cached) {
    state = std::move(*cached);
  } else {
    std::string q = claims->queue, id = claims->jti;
    auto rec = co_await st.queues->admission_record(std::move(q), std::move(id));
    if (!rec)
      co_return gate_refusal(503, "unavailable", "the admission state could not be read", version);
    state = std::move(rec.value());
    st.gate->states.put(claims->jti, state, now);
  }
  const long long at = wall_ms();
  auto answer = gate_decide(*claims, queue, state, at);
  if (answer.status != 204)
    co_return gate_refusal(answer.status, answer.error, answer.message, version);
  st.gate->renewals.add(claims->queue, claims->jti, at);  // sent by flush_gate_renewals
  http_response res{http::status::no_content, version};
  res.set(http::field::cache_control, "no-store");
  res.set("X-Pushonce-User", claims->sub);
  res.set("X-Pushonce-Resource", claims->resource);
  res.set("X-Pushonce-Admission", claims->jti);
  res.keep_alive(req.keep_alive());
  co_return res;
}

asio::awaitable<http_response> gate_cookie_route(http_request& req, gateway_state& st) {
  const auto version = req.version();
  if (!gate_same_origin(req[http::field::origin], req[http::field::host]))
    co_return gate_refusal(403, "forbidden", "the Origin must be this gateway's own", version);
  boost::system::error_code ec;
  auto body = boost::json::parse(req.body(), ec);
  const boost::json::value* t =
      !ec && body.is_object() ? body.as_object().if_contains("token") : nullptr;
  if (!t || !t->is_string())
    co_return gate_refusal(400, "bad_request", "the body must be {\"token\":\"...\"}", version);
  const std::string token(t->as_string());
  auto claims = st.settings.admission_verifier
                    ? st.gate->tokens.claims_of(token, *st.settings.admission_verifier)
                    : std::nullopt;
  if (!claims || claims->iss != st.settings.admission_issuer)
    co_return gate_refusal(401, "unauthorized", "the admission token is not valid", version);
  http_response res{http::status::no_content, version};
  res.set(http::field::cache_control, "no-store");
  res.set(http::field::set_cookie,
          gate_cookie(token, st.settings.dev_auth, st.settings.gate_cookie_domain));
  res.keep_alive(req.keep_alive());
  co_return res;
}

asio::awaitable<void> flush_gate_renewals(gateway_state& st, asio::steady_timer& timer) {
  const std::chrono::milliseconds every(1000);
  while (!st.stopping) {
    timer.expires_after(every);
    auto [ec] = co_await timer.async_wait(use_tuple);
    if (ec || st.stopping) co_return;
    // the timer paces the batches
    auto batch =
        st.gate->renewals.take(std::chrono::steady_clock::now(), std::chrono::milliseconds(0));
    if (!batch.empty()) co_await flush_renewals(st, std::move(batch));
  }
}

}  // namespace pushonce::gateway
