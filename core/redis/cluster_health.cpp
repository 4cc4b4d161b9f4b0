#include "core/redis/cluster_health.hpp"

#include <charconv>

#include "core/redis/hash_slot.hpp"

namespace pushonce::redis {
namespace {

std::vector<std::string_view> words(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    std::size_t j = i;
    while (j < line.size() && line[j] != ' ') ++j;
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

bool has_flag(std::string_view flags, std::string_view flag) {
  std::size_t i = 0;
  while (i <= flags.size()) {
    auto j = flags.find(',', i);
    if (j == std::string_view::npos) j = flags.size();
    if (flags.substr(i, j - i) == flag) return true;
    i = j + 1;
  }
  return false;
}

std::optional<unsigned> slot_number(std::string_view s) {
  unsigned n = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  if (ec != std::errc() || end != s.data() + s.size() || n >= slot_count) return std::nullopt;
  return n;
}

}  // namespace

std::optional<std::vector<slot_range>> slots_without_master(std::string_view nodes) {
  // served[s]: a master that is not failed claims slot s.
  std::vector<bool> served(slot_count, false);
  std::size_t lines = 0;
  while (!nodes.empty()) {
    auto nl = nodes.find('\n');
    auto line = nodes.substr(0, nl);
    nodes = nl == std::string_view::npos ? std::string_view{} : nodes.substr(nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    auto w = words(line);
    if (w.size() < 8) return std::nullopt;
    ++lines;
    if (!has_flag(w[2], "master") || has_flag(w[2], "fail")) continue;
    for (std::size_t i = 8; i < w.size(); ++i) {
      if (w[i].front() == '[') continue;  // a slot being imported or migrated
      auto dash = w[i].find('-');
      auto first = slot_number(w[i].substr(0, dash));
      auto last = dash == std::string_view::npos ? first : slot_number(w[i].substr(dash + 1));
      if (!first || !last || *last < *first) return std::nullopt;
      for (unsigned s = *first; s <= *last; ++s) served[s] = true;
    }
  }
  if (lines == 0) return std::nullopt;
  std::vector<slot_range> out;
  for (unsigned s = 0; s < slot_count; ++s) {
    if (served[s]) continue;
    if (!out.empty() && out.back().last + 1 == s)
      out.back().last = s;
    else
      out.push_back({s, s});
  }
  return out;
}

std::string to_string(const std::vector<slot_range>& ranges) {
  std::string out;
  for (const auto& r : ranges) {
    if (!out.empty()) out += ',';
    out += std::to_string(r.first);
    if (r.last != r.first) out += '-' + std::to_string(r.last);
  }
  return out;
}

}  // namespace pushonce::redis
