#include "worker/bus_backlog.hpp"
// (the header under test first: it is self-contained)

#include <doctest/doctest.h>

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_bus_backlog_unit {

using pushonce::worker::bus_backlog;

TEST_CASE("bus_backlog: a payload over the message bound is dropped") {
  bus_backlog b(10, 1 << 20);
  CHECK(b.admit(6, 100));
  CHECK_FALSE(b.admit(5, 100));  // 11 messages
  CHECK(b.messages() == 6);
  CHECK(b.admit(4, 100));  // exactly 10
  CHECK_FALSE(b.admit(1, 1));
  b.release(6, 100);
  CHECK(b.admit(1, 1));
  CHECK(b.messages() == 5);
  CHECK(b.bytes() == 101);
}

TEST_CASE("bus_backlog: a payload over the byte bound is dropped, whatever its message count") {
  bus_backlog b(100000, 1000);
  CHECK(b.admit(1, 600));
  CHECK_FALSE(b.admit(1, 401));  // 1001 bytes
  CHECK(b.bytes() == 600);
  CHECK(b.admit(1, 400));  // exactly 1000
  CHECK_FALSE(b.admit(0, 1));
  CHECK_FALSE(b.admit(1, 5000));  // larger than the whole bound
  b.clear();
  CHECK(b.messages() == 0);
  CHECK(b.bytes() == 0);
  CHECK(b.admit(1, 1000));
}

TEST_CASE("bus_backlog: release never goes below zero") {
  bus_backlog b(10, 10);
  CHECK(b.admit(2, 5));
  b.release(3, 6);
  CHECK(b.messages() == 0);
  CHECK(b.bytes() == 0);
}

}  // namespace test_bus_backlog_unit
