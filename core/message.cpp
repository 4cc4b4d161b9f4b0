#include "core/message.hpp"

#include <boost/json.hpp>
#include <cstdint>

#include "core/names.hpp"

namespace pushonce {

namespace json = boost::json;

namespace {

/// Reads `"` + a run of characters accepted by `ok` + `"` at `pos`; advances past it.
template <typename Pred>
std::optional<std::string_view> quoted(std::string_view s, std::size_t& pos, Pred ok) {
  if (pos >= s.size() || s[pos] != '"') return std::nullopt;
  auto end = pos + 1;
  while (end < s.size() && ok(s[end])) ++end;
  if (end >= s.size() || s[end] != '"' || end == pos + 1) return std::nullopt;
  auto v = s.substr(pos + 1, end - pos - 1);
  pos = end + 1;
  return v;
}

bool expect(std::string_view s, std::size_t& pos, std::string_view lit) {
  if (s.substr(pos, lit.size()) != lit) return false;
  pos += lit.size();
  return true;
}

bool digit(char c) {
  return c >= '0' && c <= '9';
}
// A user or source name in a bus line: a valid name, or a source with its ":" separator.
bool line_name_char(char c) {
  return digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '.' || c == '_' ||
         c == '@' || c == '-' || c == ':';
}

/// A message id the scripts can write: 1-16 digits, at most 2^53 (they build ids with
/// "%.0f", exact up to there). claim.lua and keys::claim_bucket name an id's record bucket
/// from its value, in doubles and in integers: beyond 2^53 the two would differ.
bool message_id(std::string_view id) {
  if (id.empty() || id.size() > 16) return false;
  std::uint64_t v = 0;
  for (char c : id) {
    if (!digit(c)) return false;
    v = v * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return v <= (std::uint64_t{1} << 53);
}

/// The scripts' own layout, without a JSON parse.
std::optional<bus_message> scan(std::string_view text) {
  std::size_t pos = 0;
  if (!expect(text, pos, R"({"id":)")) return std::nullopt;
  auto id = quoted(text, pos, digit);
  if (!id || !message_id(*id) || !expect(text, pos, R"(,"user":)")) return std::nullopt;
  auto user = quoted(text, pos, line_name_char);
  if (!user || !valid_name(*user) || !expect(text, pos, R"(,"src":)")) return std::nullopt;
  auto src = quoted(text, pos, line_name_char);
  if (!src || text.substr(pos, 9) != R"(,"kind":")" || text.back() != '}') return std::nullopt;
  // The tail must end in ,"ts":<digits>} as the scripts write it.
  auto ts = text.rfind(R"(,"ts":)");
  if (ts == std::string_view::npos || ts < pos || ts + 7 > text.size() - 1) return std::nullopt;
  if (text.size() - 1 - (ts + 6) > 15) return std::nullopt;
  long long ms = 0;
  for (auto i = ts + 6; i + 1 < text.size(); ++i) {
    if (!digit(text[i])) return std::nullopt;
    ms = ms * 10 + (text[i] - '0');
  }
  return bus_message{std::string(*id),  std::string(*user),
                     std::string(*src), std::string(text.substr(pos)),
                     std::string(text), ms};
}

}  // namespace

std::optional<bus_message> parse_bus_message(std::string_view text, std::string* why) {
  if (auto m = scan(text)) return m;
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
  if (!message_id(*id)) return fail("id out of range (more than 2^53)");
  if (!user || !valid_name(*user)) return fail("missing or bad user");
  if (!kind || kind->empty()) return fail("missing kind");
  if (!data) return fail("missing data");
  if (!ts || !ts->is_number()) return fail("missing ts");
  // A ts that is no whole number of ms (1.5, -1, 1e300) is refused here, never thrown
  // later: this runs in the worker's bus and sweeper loops.
  auto ms = ts->to_number<std::int64_t>(ec);
  if (ec || ms < 0) return fail("ts is not a whole non-negative number of ms");
  bus_message m;
  m.id = std::string(*id);
  m.user = std::string(*user);
  if (auto* src = str("src")) m.src = std::string(*src);
  m.tail.append(R"(,"kind":)")
      .append(json::serialize(*kind))
      .append(R"(,"data":)")
      .append(json::serialize(*data))
      .append(R"(,"ts":)")
      .append(std::to_string(ms))
      .append("}");
  m.raw = std::string(text);
  m.ts = ms;
  return m;
}

std::string with_publish_time(const bus_message& m, long long ts) {
  // The tail always ends in ,"ts":<digits>} (the scan checks it; the fallback writes it).
  auto at = m.tail.rfind(R"(,"ts":)");
  std::string line;
  line.reserve(m.raw.size() + 32);
  line.append(R"({"id":")").append(m.id).append(R"(","user":")").append(m.user).append("\"");
  if (!m.src.empty()) line.append(R"(,"src":")").append(m.src).append("\"");
  line.append(m.tail, 0, at).append(R"(,"ts":)").append(std::to_string(ts)).append("}");
  return line;
}

std::vector<std::string_view> split_bus_payload(std::string_view payload) {
  std::vector<std::string_view> lines;
  while (!payload.empty()) {
    auto nl = payload.find('\n');
    auto line = payload.substr(0, nl);
    if (!line.empty()) lines.push_back(line);
    if (nl == std::string_view::npos) break;
    payload.remove_prefix(nl + 1);
  }
  return lines;
}

std::string render_frame(const bus_message& m, long long offset) {
  std::string f;
  f.reserve(40 + m.id.size() + m.tail.size());
  f.append(R"({"type":"message","id":")")
      .append(m.id)
      .append(R"(","offset":)")
      .append(std::to_string(offset))
      .append(m.tail);
  return f;
}

}  // namespace pushonce
