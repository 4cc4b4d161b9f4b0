// pushonce-bench's latency histogram (fixed relative error) and rate schedule.

#include <doctest/doctest.h>

#include <chrono>
#include <cmath>

#include "bench/latency_histogram.hpp"
#include "bench/rate_schedule.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_bench_histogram_unit {

using namespace pushonce::bench;
using namespace std::chrono_literals;

TEST_CASE("bench histogram: small values are exact, large ones within the relative error") {
  for (std::uint64_t v : {0ULL, 1ULL, 127ULL})
    CHECK(latency_histogram::bucket_low(latency_histogram::bucket_of(v)) == v);
  for (std::uint64_t v : {128ULL, 129ULL, 1000ULL, 123456ULL, 987654321ULL, (1ULL << 62) + 12345}) {
    auto b = latency_histogram::bucket_of(v);
    CHECK(latency_histogram::bucket_low(b) <= v);
    CHECK(latency_histogram::bucket_high(b) >= v);
    const double width = static_cast<double>(latency_histogram::bucket_high(b) -
                                             latency_histogram::bucket_low(b) + 1);
    CHECK(width / static_cast<double>(v) <= 2 * latency_histogram::relative_error + 1e-12);
  }
  // Buckets are contiguous and ordered.
  for (std::size_t b = 0; b < 1000; ++b)
    CHECK(latency_histogram::bucket_high(b) + 1 == latency_histogram::bucket_low(b + 1));
}

TEST_CASE("bench histogram: percentiles of a known distribution") {
  latency_histogram h;
  for (std::uint64_t v = 1; v <= 10000; ++v) h.record(v);
  CHECK(h.count() == 10000);
  CHECK(h.max() == 10000);
  CHECK(h.min() == 1);
  auto near = [](std::uint64_t got, double want) {
    return std::abs(static_cast<double>(got) - want) <=
           want * latency_histogram::relative_error + 1;
  };
  CHECK(near(h.percentile(0.5), 5000));
  CHECK(near(h.percentile(0.99), 9900));
  CHECK(h.percentile(1.0) <= 10000);
  CHECK(h.mean() == doctest::Approx(5000.5));
  latency_histogram empty;
  CHECK(empty.percentile(0.5) == 0);
}

TEST_CASE("bench histogram: merging adds the counts") {
  latency_histogram a, b;
  for (int i = 0; i < 100; ++i) a.record(10);
  for (int i = 0; i < 100; ++i) b.record(1000);
  a.merge(b);
  CHECK(a.count() == 200);
  CHECK(a.percentile(0.25) == 10);
  CHECK(a.percentile(0.75) >= 992);
  CHECK(a.max() == 1000);
}

TEST_CASE("bench schedule: batches are due on the rate, not when the previous was answered") {
  rate_schedule s(6500, 100, 1050);
  CHECK(s.paced());
  CHECK(s.batches() == 11);
  CHECK(s.size_of(10) == 50);
  CHECK(s.size_of(11) == 0);
  CHECK(s.first_of(3) == 300);
  CHECK(s.due(0) == 0ns);
  // 100 messages at 6500/s: a batch every 15.38 ms.
  CHECK(s.due(1).count() == 15384615);
  CHECK(s.due(10).count() == 153846154);
  CHECK(s.due_by(0ns) == 1);
  CHECK(s.due_by(15384614ns) == 1);
  CHECK(s.due_by(15384615ns) == 2);
  CHECK(s.due_by(10s) == 11);
  CHECK(rate_schedule::messages_in(6500, 5000ms) == 32500);
}

TEST_CASE("bench schedule: unpaced runs send everything at once") {
  rate_schedule s(0, 100, 20000);
  CHECK_FALSE(s.paced());
  CHECK(s.due(150) == 0ns);
  CHECK(s.due_by(0ns) == 200);
  rate_schedule open(0, 100, 0);  // --duration: no total
  CHECK(open.batches() == 0);
  CHECK(open.size_of(1000000) == 100);
}

}  // namespace test_bench_histogram_unit
