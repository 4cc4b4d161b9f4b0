#include "bench/floor_logic.hpp"

#include <fmt/format.h>

#include <boost/json.hpp>

namespace pushonce::bench {
namespace json = boost::json;

floor_logic::outcome floor_logic::publish(std::string_view body, std::int64_t now_ms) {
  outcome out;
  boost::system::error_code ec;
  auto v = json::parse(body, ec);
  const json::array* batch = nullptr;
  json::array single;
  if (!ec && v.is_object()) {
    auto it = v.as_object().find("messages");
    if (it != v.as_object().end() && it->value().is_array()) {
      batch = &it->value().as_array();
    } else {
      single.push_back(v);
      batch = &single;
    }
  }
  if (batch == nullptr || batch->empty()) {
    out.status = 400;
    out.body = R"({"error":"bad_request","message":"not a publish body"})";
    return out;
  }
  json::array results;
  for (const auto& m : *batch) {
    const auto* o = m.if_object();
    const auto* user = o ? o->if_contains("user") : nullptr;
    if (user == nullptr || !user->is_string()) {
      out.status = 400;
      out.body = R"({"error":"bad_request","message":"a message without a user"})";
      out.deliveries.clear();
      return out;
    }
    const auto id = std::to_string(next_id_++);
    auto& offset = offsets_[std::string(user->as_string())];
    ++offset;
    const auto* data = o->if_contains("data");
    delivery d;
    d.user = std::string(user->as_string());
    d.frame = fmt::format(
        R"({{"type":"message","id":"{}","offset":{},"kind":"message","data":{},"ts":{}}})", id,
        offset, data ? json::serialize(*data) : "null", now_ms);
    d.twice = duplicate_every_ != 0 && ++frames_ % duplicate_every_ == 0;
    out.deliveries.push_back(std::move(d));
    results.push_back(json::object{{"id", id}, {"duplicate", false}});
  }
  out.body = batch == &single ? json::serialize(results.front())
                              : json::serialize(json::object{{"results", std::move(results)}});
  return out;
}

std::string floor_logic::welcome(std::string_view user) {
  auto it = offsets_.find(std::string(user));
  return json::serialize(json::object{{"type", "welcome"},
                                      {"user", user},
                                      {"session", "floor"},
                                      {"epoch", "floor"},
                                      {"offset", it == offsets_.end() ? 0 : it->second},
                                      {"recovered", true}});
}

}  // namespace pushonce::bench
