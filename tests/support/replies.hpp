#pragma once
// Redis replies built by hand, for unit tests of code that parses them (no server).

#include <string>
#include <utility>
#include <vector>

#include "core/redis/reply.hpp"

namespace pushonce::test {

inline redis::reply str(std::string s) {
  redis::reply r;
  r.kind = redis::reply::type::string;
  r.str = std::move(s);
  return r;
}

inline redis::reply integer(long long v) {
  redis::reply r;
  r.kind = redis::reply::type::integer;
  r.integer = v;
  return r;
}

inline redis::reply array(std::vector<redis::reply> elements) {
  redis::reply r;
  r.kind = redis::reply::type::array;
  r.elements = std::move(elements);
  return r;
}

}  // namespace pushonce::test
