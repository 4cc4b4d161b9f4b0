// core/capacity_report: the per-minute hashes summed into `pushonce-leader report`.
#include <doctest/doctest.h>

#include <boost/json.hpp>

#include "core/capacity_report.hpp"

namespace json = boost::json;
using pushonce::capacity_report;
using pushonce::histogram_percentile;
using pushonce::parse_since;
using pushonce::report_minute;

TEST_CASE("capacity report: log2 histogram percentiles are the upper end of their bucket") {
  CHECK_FALSE(histogram_percentile({}, 0.5));
  CHECK_FALSE(histogram_percentile({0, 0}, 0.5));
  // 10 waits under 1 s (bucket 0), 10 of 1-2 s (1), 80 of 63-126 s (6).
  std::vector<long long> b{10, 10, 0, 0, 0, 0, 80};
  CHECK(histogram_percentile(b, 0.1) == 1);
  CHECK(histogram_percentile(b, 0.2) == 3);
  CHECK(histogram_percentile(b, 0.5) == 127);
  CHECK(histogram_percentile(b, 1.0) == 127);
}

TEST_CASE("capacity report: sums, peaks, percentiles and the rate against its setting") {
  std::vector<report_minute> minutes{{29000001,
                                      {{"joins", "7"},
                                       {"admitted", "4"},
                                       {"w:6", "4"},
                                       {"wait_max", "120"},
                                       {"active_peak", "4"},
                                       {"rate_per_min", "5"},
                                       {"max_active", "4"},
                                       {"refused_full", "2"}}},
                                     {29000000,
                                      {{"joins", "10"},
                                       {"admitted", "6"},
                                       {"w:0", "6"},
                                       {"wait_max", "0"},
                                       {"active_peak", "3"},
                                       {"rate_per_min", "5"},
                                       {"l:4", "2"},
                                       {"leases_expired", "2"},
                                       {"released", "1"},
                                       {"l:10", "1"}}}};
  auto r = capacity_report("default", 1, 2, minutes);
  CHECK(r.at("joins").as_int64() == 17);
  CHECK(r.at("admitted").as_int64() == 10);
  CHECK(r.at("refused").at("full").as_int64() == 2);
  CHECK(r.at("leases_expired").as_int64() == 2);
  CHECK(r.at("released").as_int64() == 1);
  CHECK(r.at("wait_s").at("p50").as_int64() == 1);    // 6 of 10 under 1 s
  CHECK(r.at("wait_s").at("p90").as_int64() == 127);  // 4 in 63-126 s
  CHECK(r.at("wait_s").at("max").as_int64() == 120);
  CHECK(r.at("lease_s").at("p50").as_int64() == 31);
  CHECK(r.at("lease_s").at("p95").as_int64() == 2047);
  CHECK(r.at("admissions_per_min").at("average").as_double() == 5.0);
  CHECK(r.at("admissions_per_min").at("peak").as_int64() == 6);
  CHECK(r.at("admissions_per_min").at("rate_per_min").as_int64() == 5);
  CHECK(r.at("active").at("peak").as_int64() == 4);
  CHECK(r.at("active").at("max_active").as_int64() == 4);
  // Minutes in time order, whatever order they came in.
  const auto& per = r.at("minutes").as_array();
  REQUIRE(per.size() == 2);
  CHECK(per[0].at("at").as_int64() == 29000000LL * 60000);
  CHECK(!pushonce::capacity_report_text(r).empty());
  // Nothing recorded: zeros and nulls, no division by zero.
  auto empty = capacity_report("q", 1, 2, {});
  CHECK(empty.at("admitted").as_int64() == 0);
  CHECK(empty.at("wait_s").at("max").is_null());
  CHECK(empty.at("admissions_per_min").at("average").as_double() == 0.0);
}

TEST_CASE("capacity report: --since as an age, an RFC 3339 time or ms") {
  const long long now = 1800000000000;
  CHECK(parse_since("90m", now) == now - 90 * 60000);
  CHECK(parse_since("24h", now) == now - 86400000);
  CHECK(parse_since("7d", now) == now - 7 * 86400000LL);
  CHECK(parse_since("1700000000000", now) == 1700000000000);
  CHECK(parse_since("2026-01-01T00:00:00Z", now) == 1767225600000);
  CHECK_FALSE(parse_since("yesterday", now));
  CHECK_FALSE(parse_since("-5h", now));
}
