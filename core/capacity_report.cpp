#include "core/capacity_report.hpp"

#include <algorithm>
#include <boost/json.hpp>
#include <charconv>
#include <cmath>
#include <map>

#include "core/json_text.hpp"
#include "core/queue_settings.hpp"

namespace pushonce {

namespace json = boost::json;

namespace {

long long number_of(std::string_view s) {
  long long v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc{} ? v : 0;
}

// Adds bucket "<prefix><b>" of `field` to `buckets` when the field is one.
void add_bucket(std::vector<long long>& buckets, std::string_view prefix, std::string_view field,
                long long count) {
  if (field.substr(0, prefix.size()) != prefix) return;
  auto b = number_of(field.substr(prefix.size()));
  if (b < 0 || b > 62) return;
  if (buckets.size() <= static_cast<std::size_t>(b)) buckets.resize(b + 1, 0);
  buckets[b] += count;
}

json::value optional_number(const std::optional<long long>& v) {
  return v ? json::value(*v) : json::value(nullptr);
}

}  // namespace

std::optional<long long> histogram_percentile(const std::vector<long long>& buckets, double p) {
  long long total = 0;
  for (auto c : buckets) total += c;
  if (total == 0) return std::nullopt;
  const double want = p * static_cast<double>(total);
  long long seen = 0;
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    seen += buckets[b];
    if (static_cast<double>(seen) >= want && buckets[b] > 0) return (1LL << (b + 1)) - 1;
  }
  return (1LL << buckets.size()) - 1;
}

json::object capacity_report(std::string_view queue, long long since_ms, long long until_ms,
                             const std::vector<report_minute>& minutes) {
  std::map<std::string, long long> sums;
  std::vector<long long> waits, leases;
  long long wait_max = 0, active_peak = 0, max_active = 0, rate_set = 0, admitted_peak = 0;
  long long admitting_minutes = 0;
  std::vector<report_minute> ordered = minutes;
  std::sort(ordered.begin(), ordered.end(),
            [](const auto& a, const auto& b) { return a.minute < b.minute; });
  json::array per_minute;
  for (const auto& m : ordered) {
    std::map<std::string, long long> f;
    for (const auto& [name, value] : m.fields) f[name] = number_of(value);
    for (const auto& [name, value] : f) {
      add_bucket(waits, "w:", name, value);
      add_bucket(leases, "l:", name, value);
    }
    for (const char* name : {"joins", "refused_closed", "refused_full", "refused_pow", "abandoned",
                             "admitted", "offers_expired", "leases_expired", "released"})
      sums[name] += f[name];
    wait_max = std::max(wait_max, f["wait_max"]);
    active_peak = std::max(active_peak, f["active_peak"]);
    max_active = std::max(max_active, f["max_active"]);
    rate_set = std::max(rate_set, f["rate_per_min"]);
    admitted_peak = std::max(admitted_peak, f["admitted"]);
    if (f["admitted"] > 0) ++admitting_minutes;
    per_minute.push_back(json::object{{"at", m.minute * 60000},
                                      {"joins", f["joins"]},
                                      {"admitted", f["admitted"]},
                                      {"rate_per_min", f["rate_per_min"]},
                                      {"active_peak", f["active_peak"]},
                                      {"max_active", f["max_active"]}});
  }
  json::object o;
  o["queue"] = queue;
  o["since"] = since_ms;
  o["until"] = until_ms;
  o["joins"] = sums["joins"];
  o["refused"] = json::object{{"closed", sums["refused_closed"]},
                              {"full", sums["refused_full"]},
                              {"pow", sums["refused_pow"]}};
  o["abandoned"] = sums["abandoned"];
  o["admitted"] = sums["admitted"];
  o["offers_expired"] = sums["offers_expired"];
  o["leases_expired"] = sums["leases_expired"];
  o["released"] = sums["released"];
  o["wait_s"] = json::object{{"p50", optional_number(histogram_percentile(waits, 0.5))},
                             {"p90", optional_number(histogram_percentile(waits, 0.9))},
                             {"max", sums["admitted"] > 0 ? json::value(wait_max) : nullptr}};
  o["lease_s"] = json::object{{"p50", optional_number(histogram_percentile(leases, 0.5))},
                              {"p95", optional_number(histogram_percentile(leases, 0.95))}};
  const double average = admitting_minutes > 0 ? static_cast<double>(sums["admitted"]) /
                                                     static_cast<double>(admitting_minutes)
                                               : 0.0;
  o["admissions_per_min"] = json::object{{"average", std::round(average * 10) / 10},
                                         {"peak", admitted_peak},
                                         {"rate_per_min", rate_set}};
  o["active"] = json::object{{"peak", active_peak}, {"max_active", max_active}};
  o["minutes"] = std::move(per_minute);
  return o;
}

std::string capacity_report_text(const json::object& r) {
  auto n = [&](const json::object& o, const char* k) { return json_text(o.at(k)); };
  const auto& refused = r.at("refused").as_object();
  const auto& wait = r.at("wait_s").as_object();
  const auto& lease = r.at("lease_s").as_object();
  const auto& rate = r.at("admissions_per_min").as_object();
  const auto& active = r.at("active").as_object();
  std::string t;
  t += "queue " + std::string(r.at("queue").as_string()) + ", from " + n(r, "since") + " to " +
       n(r, "until") + " (ms)\n";
  t += "joins " + n(r, "joins") + ", refused closed " + n(refused, "closed") + " full " +
       n(refused, "full") + " pow " + n(refused, "pow") + ", abandoned " + n(r, "abandoned") + "\n";
  t += "admitted " + n(r, "admitted") + ", offers expired " + n(r, "offers_expired") +
       ", leases expired " + n(r, "leases_expired") + ", released " + n(r, "released") + "\n";
  t += "wait from join to admission (s): p50 <= " + n(wait, "p50") + ", p90 <= " + n(wait, "p90") +
       ", max " + n(wait, "max") + "\n";
  t += "lease length (s): p50 <= " + n(lease, "p50") + ", p95 <= " + n(lease, "p95") + "\n";
  t += "admissions per minute: average " + n(rate, "average") + ", peak " + n(rate, "peak") +
       " (rate " + n(rate, "rate_per_min") + ")\n";
  t += "live admissions: peak " + n(active, "peak") + " (max-active " + n(active, "max_active") +
       ")\n";
  return t;
}

std::optional<long long> parse_since(std::string_view text, long long now_ms) {
  if (text.size() >= 2 && text.size() <= 8) {
    const char unit = text.back();
    const long long scale = unit == 'm'   ? 60000
                            : unit == 'h' ? 3600000
                            : unit == 'd' ? 86400000
                                          : 0;
    auto digits = text.substr(0, text.size() - 1);
    long long v = 0;
    auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
    if (scale > 0 && ec == std::errc{} && p == digits.data() + digits.size() && v >= 0)
      return now_ms - v * scale;
  }
  return parse_open_time(text);
}

}  // namespace pushonce
