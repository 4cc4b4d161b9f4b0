#include "bench/wire.hpp"

#include <fmt/format.h>

#include <boost/json.hpp>

namespace pushonce::bench {
namespace json = boost::json;
namespace {

std::int64_t int_of(const json::object& o, std::string_view name, std::int64_t fallback) {
  auto it = o.find(name);
  if (it == o.end()) return fallback;
  if (it->value().is_int64()) return it->value().as_int64();
  if (it->value().is_uint64()) return static_cast<std::int64_t>(it->value().as_uint64());
  return fallback;
}

std::string string_of(const json::object& o, std::string_view name) {
  auto it = o.find(name);
  if (it == o.end() || !it->value().is_string()) return {};
  return std::string(it->value().as_string());
}

}  // namespace

server_frame parse_frame(std::string_view text) {
  server_frame f;
  // A small arena on the stack: a frame of a run is ~150 bytes, and the parse is on every
  // received frame.
  unsigned char arena[4096];
  json::monotonic_resource mr(arena, sizeof arena);
  boost::system::error_code ec;
  auto v = json::parse(text, ec, &mr);
  if (ec || !v.is_object()) return f;
  const auto& o = v.as_object();
  auto type = string_of(o, "type");
  if (type == "message") {
    f.type = server_frame::kind::message;
    f.offset = int_of(o, "offset", -1);
    f.ts = int_of(o, "ts", 0);
    auto d = o.find("data");
    if (d != o.end() && d->value().is_object()) {
      const auto& data = d->value().as_object();
      f.seq = int_of(data, "s", -1);
      f.due = int_of(data, "t", 0);
      f.run = string_of(data, "r");
    }
  } else if (type == "welcome") {
    f.type = server_frame::kind::welcome;
    f.epoch = string_of(o, "epoch");
    f.offset = int_of(o, "offset", -1);
    auto r = o.find("recovered");
    f.recovered = r == o.end() || !r->value().is_bool() || r->value().as_bool();
  } else if (type == "error") {
    f.type = server_frame::kind::error;
    f.code = string_of(o, "code");
  } else {
    f.type = server_frame::kind::other;
  }
  return f;
}

std::string hello_frame(std::string_view user, std::string_view token, const std::string* epoch,
                        std::int64_t offset) {
  json::object o{{"op", "hello"}};
  if (token.empty())
    o["user"] = user;
  else
    o["token"] = token;
  if (epoch != nullptr) o["since"] = json::object{{"epoch", *epoch}, {"offset", offset}};
  return json::serialize(o);
}

std::string user_name(std::string_view prefix, std::uint64_t user) {
  return fmt::format("{}{}", prefix, user);
}

std::string publish_body(std::string_view prefix, std::string_view run, std::uint64_t users,
                         std::uint64_t first, std::uint64_t count, std::int64_t due, bool keys) {
  std::string out;
  out.reserve(32 + count * (prefix.size() + 2 * run.size() + 64));
  out += R"({"messages":[)";
  for (std::uint64_t k = first; k < first + count; ++k) {
    if (k != first) out += ',';
    fmt::format_to(std::back_inserter(out), R"({{"user":"{}{}","data":{{"r":"{}","s":{},"t":{}}})",
                   prefix, k % users, run, k, due);
    if (keys) fmt::format_to(std::back_inserter(out), R"(,"id":"{}-{}")", run, k);
    out += '}';
  }
  out += "]}";
  return out;
}

std::optional<std::vector<bool>> parse_publish_reply(std::string_view body, std::uint64_t count) {
  boost::system::error_code ec;
  auto v = json::parse(body, ec);
  if (ec || !v.is_object()) return std::nullopt;
  auto it = v.as_object().find("results");
  if (it == v.as_object().end() || !it->value().is_array()) return std::nullopt;
  const auto& results = it->value().as_array();
  if (results.size() != count) return std::nullopt;
  std::vector<bool> ok;
  ok.reserve(results.size());
  for (const auto& r : results)
    ok.push_back(r.is_object() && r.as_object().contains("id") &&
                 r.as_object().at("id").is_string());
  return ok;
}

}  // namespace pushonce::bench
