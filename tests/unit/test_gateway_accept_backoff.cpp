#include <doctest/doctest.h>

#include <cerrno>

#include "gateway/server/accept_backoff.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_gateway_accept_backoff_unit {

using namespace pushonce::gateway;
using namespace std::chrono_literals;

namespace {
std::error_code sys(int e) {
  return {e, std::system_category()};
}
}  // namespace

TEST_CASE("accept_backoff: out of descriptors backs off and warns once per episode") {
  accept_backoff b(50ms, 10s);
  auto t = accept_backoff::clock::now();
  auto d1 = b.on_error(sys(EMFILE), t);
  CHECK(d1.delay == 50ms);
  CHECK(d1.warn);
  CHECK(b.backing_off());
  for (int i = 1; i < 100; ++i) {
    auto d = b.on_error(sys(i % 2 ? ENFILE : EMFILE), t + std::chrono::milliseconds(50 * i));
    CHECK(d.delay == 50ms);
    CHECK_FALSE(d.warn);  // never a line per try
  }
  CHECK(b.retries() == 100);
  CHECK(b.on_accepted());  // the episode ends: one info line
  CHECK_FALSE(b.backing_off());
  CHECK_FALSE(b.on_accepted());
}

TEST_CASE("accept_backoff: ENOBUFS and ENOMEM count as exhaustion; others do not") {
  CHECK(accept_backoff::exhausted(sys(ENOBUFS)));
  CHECK(accept_backoff::exhausted(sys(ENOMEM)));
  CHECK(accept_backoff::exhausted(std::make_error_code(std::errc::too_many_files_open)));
  CHECK_FALSE(accept_backoff::exhausted(sys(ECONNABORTED)));
  CHECK_FALSE(accept_backoff::exhausted(std::make_error_code(std::io_errc::stream)));
}

TEST_CASE("accept_backoff: another error is logged and accepting goes on at once") {
  accept_backoff b;
  auto d = b.on_error(sys(ECONNABORTED));
  CHECK(d.delay == 0ms);
  CHECK(d.warn);
  CHECK_FALSE(b.backing_off());
  CHECK_FALSE(b.on_accepted());
}

TEST_CASE("accept_backoff: flapping episodes warn at most once per interval") {
  accept_backoff b(50ms, 10s);
  auto t = accept_backoff::clock::now();
  CHECK(b.on_error(sys(EMFILE), t).warn);
  CHECK(b.on_accepted());
  auto d = b.on_error(sys(EMFILE), t + 1s);  // a new episode 1 s later: no second line
  CHECK(d.delay == 50ms);
  CHECK_FALSE(d.warn);
  CHECK_FALSE(b.on_accepted());                  // it did not warn, so its end is not logged either
  CHECK(b.on_error(sys(EMFILE), t + 11s).warn);  // after the interval: warned again
}

}  // namespace test_gateway_accept_backoff_unit
