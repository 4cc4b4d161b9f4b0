#pragma once
// What the single-Redis chaos run (tests/chaos/test_chaos.cpp) shares between its parts: the
// size of the system, and small helpers.

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "tests/support/wait.hpp"

namespace pushonce::test::chaos {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;
using words = std::vector<std::string>;

constexpr const char* ns = "chaos";
constexpr const char* queue_name = "default";
constexpr int user_count = 200;
constexpr int resource_count = 20;
constexpr int worker_count = 5;
constexpr int gateway_count = 2;
constexpr auto release_every = 40ms;  // ~25 assignments/s

inline long long env_or(const char* name, long long fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  long long n = std::atoll(v);
  return n > 0 ? n : fallback;
}

inline long long now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

inline long long ms_since(steady::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - t).count();
}

inline std::string user_name(int i) {
  return "u" + std::to_string(i);
}

inline long long percentile(std::vector<long long> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(p * static_cast<double>(v.size() - 1))];
}

}  // namespace pushonce::test::chaos
