#include "core/message_history.hpp"

#include <boost/json.hpp>
#include <charconv>

#include "core/message.hpp"

namespace pushonce {

namespace json = boost::json;

namespace {
unsigned long long id_at(std::string_view line) {
  constexpr std::string_view head = R"({"id":")";
  if (line.substr(0, head.size()) != head) return 0;
  unsigned long long v = 0;
  auto* begin = line.data() + head.size();
  auto [p, ec] = std::from_chars(begin, line.data() + line.size(), v);
  return ec == std::errc() && p != begin ? v : 0;
}
}  // namespace

std::optional<std::string> line_of(std::string_view entry, std::string_view id) {
  for (auto line : split_bus_payload(entry)) {
    auto prefix = std::string(R"({"id":")") + std::string(id) + "\"";
    if (line.substr(0, prefix.size()) == prefix) return std::string(line);
  }
  return std::nullopt;
}

unsigned long long first_id(std::string_view entry) {
  auto lines = split_bus_payload(entry);
  return lines.empty() ? 0 : id_at(lines.front());
}

unsigned long long last_id(std::string_view entry) {
  auto lines = split_bus_payload(entry);
  return lines.empty() ? 0 : id_at(lines.back());
}

json::array history(const std::string& line, const std::optional<lua::claim_record>& claim,
                    const std::vector<std::string>& detail, long long now_ms,
                    long long dedup_window_ms) {
  using kind = lua::claim_record::kind;
  json::array events;
  boost::system::error_code ec;
  auto msg = json::parse(line, ec);
  json::object published{{"event", "published"}};
  if (!ec && msg.is_object()) {
    for (const char* k : {"user", "kind", "src", "ts"})
      if (auto* v = msg.as_object().if_contains(k)) published[k] = *v;
  }
  events.push_back(std::move(published));
  if (!claim) {
    events.push_back({{"event", "unknown"}, {"reason", "the claim record could not be read"}});
  } else if (claim->state == kind::delivered) {
    events.push_back({{"event", claim->attempts > 1 ? "redelivered" : "delivered"},
                      {"offset", claim->offset},
                      {"attempts", claim->attempts}});
  } else if (claim->state == kind::leased) {
    events.push_back({{"event", claim->until_ms >= now_ms ? "leased" : "lease_expired"},
                      {"worker", claim->owner},
                      {"until", claim->until_ms},
                      {"attempts", claim->attempts}});
  } else if (claim->state == kind::released) {
    events.push_back({{"event", "released"}, {"attempts", claim->attempts}});
  } else if (claim->state == kind::dead) {
    events.push_back(
        {{"event", "dead_lettered"}, {"attempts", claim->attempts}, {"reason", claim->reason}});
  } else {
    auto ts =
        msg.is_object() && msg.as_object().contains("ts") && msg.as_object().at("ts").is_int64()
            ? msg.as_object().at("ts").as_int64()
            : now_ms;
    events.push_back(
        json::object{{"event", now_ms - ts > dedup_window_ms ? "forgotten" : "pending"}});
  }
  for (const auto& text : detail) {
    auto v = json::parse(text, ec);
    if (ec) continue;
    // The leader records `published` per assignment too: the outbox line said it first.
    if (v.is_object() && v.as_object().contains("event") &&
        v.as_object().at("event") == "published")
      continue;
    events.push_back(std::move(v));
  }
  return events;
}

}  // namespace pushonce
