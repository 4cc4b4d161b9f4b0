#include "gateway/http/publish_api.hpp"

#include <boost/json.hpp>

namespace pushonce::gateway {

namespace json = boost::json;

namespace {

failure bad(std::string message) {
  return failure{errc::bad_request, std::move(message)};
}

outcome<publish_request> parse_message(const json::value& v, const std::string& where,
                                       std::size_t max_data_bytes) {
  if (!v.is_object()) return bad(where + " must be an object {\"user\",\"data\",\"id\"?}");
  const auto& o = v.get_object();
  auto* user = o.if_contains("user");
  auto* data = o.if_contains("data");
  auto* id = o.if_contains("id");
  if (!user || !user->is_string()) return bad(where + ": \"user\" must be a string");
  if (!data) return bad(where + ": \"data\" is missing");
  publish_request r;
  r.user = std::string(user->get_string());
  r.data_json = json::serialize(*data);
  if (id && !id->is_null()) {
    if (!id->is_string()) return bad(where + ": \"id\" must be a string of 1-200 characters");
    r.idempotency_key = std::string(id->get_string());
  }
  if (auto f = validate_publish(r)) return bad(where + ": " + f->message);
  if (auto f = check_publish_size(r, max_data_bytes))
    return failure{f->code, where + ": " + f->message};
  return r;
}

}  // namespace

outcome<publish_body> parse_publish_body(std::string_view text, std::size_t max_data_bytes) {
  boost::system::error_code ec;
  auto v = json::parse(text, ec);
  if (ec) return bad("the body is not valid JSON: " + ec.message());
  if (!v.is_object()) return bad("the body must be a JSON object");
  publish_body out;
  const auto& o = v.get_object();
  if (auto* msgs = o.if_contains("messages")) {
    out.batch = true;
    if (!msgs->is_array()) return bad("\"messages\" must be an array");
    const auto& a = msgs->get_array();
    if (a.empty()) return bad("\"messages\" is empty");
    if (a.size() > max_publish_batch)
      return bad("a batch holds at most " + std::to_string(max_publish_batch) + " messages");
    out.requests.reserve(a.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      auto r = parse_message(a[i], "messages[" + std::to_string(i) + "]", max_data_bytes);
      if (!r) return r.error();
      out.requests.push_back(std::move(r.value()));
    }
    return out;
  }
  auto r = parse_message(v, "the message", max_data_bytes);
  if (!r) return r.error();
  out.requests.push_back(std::move(r.value()));
  return out;
}

publish_outcome publish_outcome_of(const std::vector<outcome<published>>& results) {
  std::size_t ok = 0;
  for (const auto& r : results)
    if (r) ++ok;
  if (ok == results.size()) return publish_outcome::all;
  return ok == 0 ? publish_outcome::none : publish_outcome::part;
}

http_answer render_publish_results(const publish_body& body,
                                   const std::vector<outcome<published>>& results) {
  auto what = publish_outcome_of(results);
  bool unavailable = false;
  for (const auto& r : results)
    if (!r && http_status_of(r.error().code).status == 503) unavailable = true;
  if (what == publish_outcome::none) {
    const auto& f = results.front().error();
    auto a = error_answer(f.code, f.message);
    a.retry = a.status == 503;
    return a;
  }
  auto one = [](const published& p) {
    json::object o;
    o["id"] = p.id;
    o["duplicate"] = p.duplicate;
    return o;
  };
  if (!body.batch && results.size() == 1) return {200, json::serialize(one(results[0].value()))};
  json::array a;
  a.reserve(results.size());
  for (const auto& r : results) {
    if (r) {
      a.push_back(one(r.value()));
      continue;
    }
    json::object e;
    e["error"] = http_status_of(r.error().code).code;
    e["message"] = r.error().message;
    a.push_back(std::move(e));
  }
  json::object o;
  o["results"] = std::move(a);
  if (what == publish_outcome::all) return {200, json::serialize(o)};
  return {207, json::serialize(o), unavailable};
}

}  // namespace pushonce::gateway
