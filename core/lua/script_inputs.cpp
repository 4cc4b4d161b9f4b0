#include "core/lua/script_inputs.hpp"

#include <regex>

#include "core/redis/script_sources.hpp"

namespace pushonce::lua {

namespace {

std::string_view trim_script_line(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

}  // namespace

script_opening read_script_opening(std::string_view text) {
  static const std::regex one(
      R"(^local ([A-Za-z_][A-Za-z0-9_]*) = (KEYS|ARGV)\[([0-9]+)\]( *--.*)?$)");
  static const std::regex tail(
      R"(^local ([A-Za-z_][A-Za-z0-9_]*) = rest\(ARGV, ([0-9]+)\)( *--.*)?$)");
  script_opening out;
  bool opening = true;
  bool variadic = false;
  while (!text.empty()) {
    auto eol = text.find('\n');
    auto line = trim_script_line(text.substr(0, eol));
    text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
    if (line.empty() || line.starts_with("--")) continue;
    std::string l(line);
    std::smatch m;
    if (opening && !variadic && std::regex_match(l, m, one)) {
      auto& list = m[2] == "KEYS" ? out.keys : out.args;
      if (std::stoul(m[3]) != list.size() + 1) out.problems.push_back("out of order: " + l);
      list.push_back(m[1]);
      continue;
    }
    if (opening && !variadic && std::regex_match(l, m, tail)) {
      if (std::stoul(m[2]) != out.args.size() + 1) out.problems.push_back("out of order: " + l);
      out.args.push_back(std::string(m[1]) + "...");
      variadic = true;
      continue;
    }
    opening = false;
    if (l.find("KEYS[") != std::string::npos || l.find("ARGV[") != std::string::npos ||
        l.find("rest(ARGV") != std::string::npos)
      out.problems.push_back("input used below the opening: " + l);
  }
  return out;
}

std::string_view script_own_text(std::string_view name) {
  for (const auto& s : redis::embedded_scripts()) {
    if (s.name != name) continue;
    // Every script's own text starts with its header comment "-- <name>.lua".
    std::string head = "\n-- " + std::string(name) + ".lua:";
    auto at = s.text.find(head);
    return at == std::string_view::npos ? s.text : s.text.substr(at + 1);
  }
  return {};
}

}  // namespace pushonce::lua
