#include "core/message.hpp"

#include <boost/json.hpp>

#include "core/names.hpp"

namespace pushonce {

namespace json = boost::json;

std::optional<bus_message> parse_bus_message(std::string_view text, std::string* why) {
  auto fail = [&](const char* reason) -> std::optional<bus_message> {
    if (why) *why = reason;
    return std::nullopt;
  };
  boost::system::error_code ec;
  auto v = json::parse(text, ec);
  if (ec || !v.is_object()) return fail("not a JSON object");
  const auto& o = v.as_object();
  auto str = [&](const char* k) -> const json::string* {
    auto* p = o.if_contains(k);
    return p && p->is_string() ? &p->as_string() : nullptr;
  };
  auto* id = str("id");
  auto* user = str("user");
  auto* kind = str("kind");
  auto* data = o.if_contains("data");
  auto* ts = o.if_contains("ts");
  if (!id || id->empty() || id->find_first_not_of("0123456789") != json::string::npos)
    return fail("missing or non-numeric id");
  if (!user || !valid_name(*user)) return fail("missing or bad user");
  if (!kind || kind->empty()) return fail("missing kind");
  if (!data) return fail("missing data");
  if (!ts || !ts->is_number()) return fail("missing ts");
  bus_message m;
  m.id = std::string(*id);
  m.user = std::string(*user);
  m.kind = std::string(*kind);
  m.data_json = json::serialize(*data);
  m.ts = ts->to_number<std::int64_t>();
  if (auto* src = str("src")) m.src = std::string(*src);
  m.raw = std::string(text);
  return m;
}

frame_parts render_frame(const bus_message& m) {
  frame_parts f;
  f.head.reserve(48 + m.id.size());
  f.head.append(R"({"type":"message","id":")").append(m.id).append(R"(","offset":)");
  f.tail.reserve(48 + m.kind.size() + m.data_json.size());
  f.tail.append(R"(,"kind":)")
      .append(json::serialize(json::string(m.kind)))
      .append(R"(,"data":)")
      .append(m.data_json)
      .append(R"(,"ts":)")
      .append(std::to_string(m.ts))
      .append("}");
  return f;
}

}  // namespace pushonce
