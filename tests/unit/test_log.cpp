#include "core/log.hpp"
// (the header under test first: it is self-contained)

#include <doctest/doctest.h>

#include <stdexcept>

namespace plog = pushonce::log;

TEST_CASE("parse_level") {
  CHECK(plog::parse_level("debug") == plog::level::debug);
  CHECK(plog::parse_level("info") == plog::level::info);
  CHECK(plog::parse_level("warn") == plog::level::warn);
  CHECK(plog::parse_level("error") == plog::level::error);
  CHECK_THROWS_AS(plog::parse_level("INFO"), std::invalid_argument);
  CHECK_THROWS_AS(plog::parse_level(""), std::invalid_argument);
  CHECK_THROWS_AS(plog::parse_level("warning"), std::invalid_argument);
}

TEST_CASE("set_level and current_level") {
  auto before = plog::current_level();
  plog::set_level(plog::level::error);
  CHECK(plog::current_level() == plog::level::error);
  plog::info("not printed {}", 1);  // below the level: no output, no crash
  plog::set_level(before);
  CHECK(plog::current_level() == before);
}
