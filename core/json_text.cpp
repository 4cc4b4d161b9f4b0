#include "core/json_text.hpp"

#include <array>
#include <boost/json/serialize.hpp>
#include <charconv>
#include <cmath>

namespace pushonce {

namespace {
void append_json(std::string& out, const boost::json::value& v) {
  switch (v.kind()) {
    case boost::json::kind::double_:
      out += number_text(v.get_double());
      return;
    case boost::json::kind::object: {
      out += '{';
      bool first = true;
      for (const auto& [k, item] : v.get_object()) {
        if (!first) out += ',';
        first = false;
        out += boost::json::serialize(boost::json::string_view(k));
        out += ':';
        append_json(out, item);
      }
      out += '}';
      return;
    }
    case boost::json::kind::array: {
      out += '[';
      bool first = true;
      for (const auto& item : v.get_array()) {
        if (!first) out += ',';
        first = false;
        append_json(out, item);
      }
      out += ']';
      return;
    }
    default:
      out += boost::json::serialize(v);
  }
}
}  // namespace

std::string number_text(double d) {
  if (!std::isfinite(d)) return "null";
  if (d == 0) return "0";  // -0 too
  std::array<char, 32> buf{};
  auto [p, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), d);
  if (ec != std::errc{}) return "null";
  return std::string(buf.data(), p);
}

std::string json_text(const boost::json::value& v) {
  std::string out;
  append_json(out, v);
  return out;
}

}  // namespace pushonce
