#include "core/metrics_text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

namespace pushonce {

const std::vector<system_counter>& system_counters() {
  static const std::vector<system_counter> all{
      {"published", "Messages published (assignments and custom messages), namespace-wide."},
      {"delivered", "Messages appended to user inboxes, namespace-wide."},
      {"duplicates_suppressed", "Claims that lost to another worker (a duplicate not sent)."},
      {"redelivered", "Messages delivered by the recovery sweeper or a catch-up."},
      {"dead_lettered", "Messages given up after --max-attempts and put in the dead letters."},
      {"dead_letters_trimmed", "Dead-letter entries dropped by the stream's MAXLEN trim."},
      {"retention_exceeded",
       "Outbox entries lost to retention before any sweeper checked them (must stay 0)."},
      {"wait_replicas_timeout", "--wait-replicas: WAITs that returned fewer replicas than asked."},
  };
  return all;
}

std::string metric_label_value(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out.push_back('\\');
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out.push_back(c);
  }
  return out;
}

namespace {
std::string metrics_series(std::string_view name, std::string_view labels) {
  return labels.empty() ? std::string(name) : fmt::format("{}{{{}}}", name, labels);
}

// A counter's text as Redis holds it: digits only, else 0.
std::string_view metrics_count_or_zero(std::string_view v) {
  if (v.empty()) return "0";
  for (char c : v)
    if (c < '0' || c > '9') return "0";
  return v;
}
}  // namespace

std::string metric_text(std::string_view name, std::string_view type, std::string_view help,
                        std::string_view labels, double value) {
  return fmt::format("# HELP {} {}\n# TYPE {} {}\n{} {}\n", name, help, name, type,
                     metrics_series(name, labels), value);
}

std::string system_counters_text(const std::vector<std::pair<std::string, std::string>>& stats,
                                 std::string_view labels) {
  std::string out;
  auto value_of = [&](std::string_view field) -> std::string_view {
    for (const auto& [k, v] : stats)
      if (k == field) return metrics_count_or_zero(v);
    return "0";
  };
  for (const auto& c : system_counters()) {
    auto name = fmt::format("pushonce_{}_total", c.field);
    out += fmt::format("# HELP {} {}\n# TYPE {} counter\n{} {}\n", name, c.help, name,
                       metrics_series(name, labels), value_of(c.field));
  }
  // Fields a newer process added that this one does not know: written as they are.
  for (const auto& [k, v] : stats) {
    bool known = std::any_of(system_counters().begin(), system_counters().end(),
                             [&](const system_counter& c) { return c.field == k; });
    bool plain = !k.empty() && std::all_of(k.begin(), k.end(), [](char c) {
      return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    });
    if (known || !plain) continue;
    auto name = fmt::format("pushonce_{}_total", k);
    out += fmt::format("# TYPE {} counter\n{} {}\n", name, metrics_series(name, labels),
                       metrics_count_or_zero(v));
  }
  return out;
}

}  // namespace pushonce
