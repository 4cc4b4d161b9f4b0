#pragma once
// `pushonce-leader report` (docs/capacity.md "Report"), socket-free: the per-minute hashes
// the scripts keep (<queue slot>:report:<minute>, 7 days: lua/lib/prelude.lua report_*)
// summed into the day-after report: joins, refusals, abandoned, admitted, offers expired,
// leases expired and released, the wait from join to admission (p50/p90/max), the lease
// length (p50/p95), admissions per minute against the rate, the peak of live admissions
// against the cap.

#include <boost/json/object.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pushonce {

/// One minute's hash: its minute (since the epoch) and its fields.
struct report_minute {
  long long minute = 0;
  std::vector<std::pair<std::string, std::string>> fields;
};

/// The bound of a log2 histogram's percentile, seconds: the upper end of the bucket that
/// holds the p-th fraction (buckets "<prefix><b>" hold [2^b - 1, 2^(b+1) - 1) s); none when
/// the histogram is empty.
std::optional<long long> histogram_percentile(const std::vector<long long>& buckets, double p);

/// The report object of `minutes` (any order; minutes without a hash are simply absent).
boost::json::object capacity_report(std::string_view queue, long long since_ms, long long until_ms,
                                    const std::vector<report_minute>& minutes);

/// The report's text form (one line per figure).
std::string capacity_report_text(const boost::json::object& report);

/// `--since`: an RFC 3339 time, ms since the epoch, or an age ("90m", "24h", "7d") before
/// `now_ms`; std::nullopt when it is none of these.
std::optional<long long> parse_since(std::string_view text, long long now_ms);

}  // namespace pushonce
