#include "core/log.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <stdexcept>
#include <string>

namespace pushonce::log {
namespace {

std::atomic<level> g_level{level::info};
std::mutex g_mutex;  // guards g_tag and serialises writes
std::string g_tag;

std::string_view level_name(level l) {
  switch (l) {
    case level::debug:
      return "debug";
    case level::info:
      return "info ";
    case level::warn:
      return "warn ";
    case level::error:
      return "error";
  }
  return "?    ";
}

std::string timestamp() {
  using namespace std::chrono;
  auto now = system_clock::now();
  auto ms = duration_cast<milliseconds>(now.time_since_epoch()).count() % 1000;
  std::time_t t = system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return fmt::format("{}.{:03}Z", buf, ms);
}

}  // namespace

level parse_level(std::string_view text) {
  if (text == "debug") return level::debug;
  if (text == "info") return level::info;
  if (text == "warn") return level::warn;
  if (text == "error") return level::error;
  throw std::invalid_argument(
      fmt::format("bad log level '{}' (expected debug, info, warn or error)", text));
}

void set_level(level l) {
  g_level.store(l, std::memory_order_relaxed);
}

level current_level() {
  return g_level.load(std::memory_order_relaxed);
}

void set_tag(std::string tag) {
  std::lock_guard lock(g_mutex);
  g_tag = std::move(tag);
}

void write(level l, std::string_view text) {
  if (l < current_level()) return;
  std::string line = timestamp();
  line += ' ';
  line += level_name(l);
  line += ' ';
  std::lock_guard lock(g_mutex);
  if (!g_tag.empty()) {
    line += g_tag;
    line += ": ";
  }
  line += text;
  line += '\n';
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

}  // namespace pushonce::log
