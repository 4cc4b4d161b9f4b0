// The worker's check of Redis's active-expire-effort (core/expire_effort).
#include "core/expire_effort.hpp"
// (the header under test first: it is self-contained)

#include <doctest/doctest.h>

using pushonce::expire_effort_warning;
using pushonce::redis::reply;

namespace {
reply config_get(std::string name, std::string value) {
  reply r;
  r.kind = reply::type::array;
  reply n, v;
  n.kind = v.kind = reply::type::string;
  n.str = std::move(name);
  v.str = std::move(value);
  r.elements = {n, v};
  return r;
}
}  // namespace

TEST_CASE("expire_effort_warning: below the recommended effort warns, with the setting to use") {
  auto w = expire_effort_warning(config_get("active-expire-effort", "1"));
  REQUIRE(w);
  CHECK(w->find("active-expire-effort is 1") != std::string::npos);
  CHECK(w->find("set active-expire-effort 10") != std::string::npos);
  CHECK(expire_effort_warning(config_get("active-expire-effort", "9")));
}

TEST_CASE("expire_effort_warning: enough, or a reply that says nothing, is no warning") {
  CHECK_FALSE(expire_effort_warning(config_get("active-expire-effort", "10")));
  CHECK_FALSE(expire_effort_warning(config_get("active-expire-effort", "40")));
  CHECK_FALSE(expire_effort_warning(config_get("active-expire-effort", "x")));
  CHECK_FALSE(expire_effort_warning(config_get("maxmemory", "1")));
  CHECK_FALSE(expire_effort_warning(reply::make_error("ERR unknown command 'CONFIG'")));
  reply empty;  // CONFIG GET of an unknown setting: an empty array
  empty.kind = reply::type::array;
  CHECK_FALSE(expire_effort_warning(empty));
}
