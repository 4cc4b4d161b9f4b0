#pragma once
// Leveled logging to stderr through fmt: one line per event,
// "2026-11-21T20:10:00.123Z info  worker[w1]: text".

#include <fmt/format.h>

#include <string_view>

namespace pushonce::log {

enum class level { debug = 0, info, warn, error };

/// "debug" | "info" | "warn" | "error"; throws std::invalid_argument otherwise.
level parse_level(std::string_view text);
void set_level(level l);
level current_level();
/// The tag printed before every line, e.g. "worker[w1]".
void set_tag(std::string tag);
void write(level l, std::string_view text);

template <typename... Args>
void debug(fmt::format_string<Args...> f, Args&&... args) {
  if (current_level() <= level::debug)
    write(level::debug, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void info(fmt::format_string<Args...> f, Args&&... args) {
  if (current_level() <= level::info)
    write(level::info, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void warn(fmt::format_string<Args...> f, Args&&... args) {
  if (current_level() <= level::warn)
    write(level::warn, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void error(fmt::format_string<Args...> f, Args&&... args) {
  write(level::error, fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace pushonce::log
