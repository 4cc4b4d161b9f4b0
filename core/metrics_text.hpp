#pragma once
// Prometheus text for the system-wide figures (NS:stats and friends) and the programs' own
// counters, without I/O: every series named here is written whether Redis has the field
// yet or not (0, never absent), so that `increase()` sees the first dead letter.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pushonce {

/// The NS:stats fields every exporter writes, with their HELP text, in order.
struct system_counter {
  std::string_view field;  // NS:stats field; the series is pushonce_<field>_total
  std::string_view help;
};
const std::vector<system_counter>& system_counters();

/// The counters of NS:stats (HGETALL pairs; missing fields are 0, unknown fields are
/// written too), as `pushonce_<field>_total{LABELS} N`, with HELP and TYPE. `labels` is
/// the inside of the braces (`namespace="pushonce"`), or empty for no labels.
std::string system_counters_text(const std::vector<std::pair<std::string, std::string>>& stats,
                                 std::string_view labels);

/// One series with its HELP and TYPE lines.
std::string metric_text(std::string_view name, std::string_view type, std::string_view help,
                        std::string_view labels, double value);

/// A label value with \, " and newline escaped (Prometheus text format).
std::string metric_label_value(std::string_view v);

}  // namespace pushonce
