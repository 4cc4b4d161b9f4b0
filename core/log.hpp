#pragma once
// Leveled logging to stderr through fmt: one line per event, in one of two formats
// (docs/operations.md "Logs"):
//   text (default)  "2026-11-21T20:10:00.123Z info  worker[w1]: text key=value ..."
//   json            {"time":"...","level":"info","program":"worker","instance":"w1",
//                    "message":"text","key":"value",...}
// Call sites that know a message id, a user, an offset or a worker pass them as fields:
//   log::info(log::fields{{"user", u}, {"offset", 7}}, "delivered {}", id);

#include <fmt/format.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/errc_format.hpp"

namespace pushonce::log {

enum class level { debug = 0, info, warn, error };
enum class format { text, json };

/// One structured field: a name and a string or integer value.
struct field {
  field(std::string_view k, std::string_view v) : key(k), value(std::string(v)) {}
  field(std::string_view k, const std::string& v) : key(k), value(v) {}
  field(std::string_view k, const char* v) : key(k), value(std::string(v)) {}
  field(std::string_view k, long long v) : key(k), value(v) {}
  field(std::string_view k, int v) : key(k), value(static_cast<long long>(v)) {}
  field(std::string_view k, unsigned v) : key(k), value(static_cast<long long>(v)) {}
  field(std::string_view k, std::int64_t v) : key(k), value(static_cast<long long>(v)) {}
  field(std::string_view k, std::uint64_t v) : key(k), value(static_cast<long long>(v)) {}
  std::string_view key;  // a literal at the call site
  std::variant<std::string, long long> value;
};
using fields = std::vector<field>;

/// "debug" | "info" | "warn" | "error"; throws std::invalid_argument otherwise.
level parse_level(std::string_view text);
/// "text" | "json"; throws std::invalid_argument otherwise.
format parse_format(std::string_view text);
void set_level(level l);
level current_level();
void set_format(format f);
format current_format();
/// Who writes: the program ("worker") and its instance id ("w1"). The text format prints
/// "worker[w1]" (or the program alone when the id is empty); JSON has both fields.
void set_identity(std::string program, std::string instance);
/// Old form of set_identity: a tag "program[instance]" or "program".
void set_tag(std::string tag);

/// One event as a line (with its '\n') in the given format; `time` is an ISO-8601 UTC
/// timestamp. Pure: what write() prints, separate so it can be tested.
std::string format_line(format f, std::string_view time, level l, std::string_view program,
                        std::string_view instance, std::string_view text, const fields& extra);

void write(level l, std::string_view text, const fields& extra = {});

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

// The same with structured fields first.
template <typename... Args>
void debug(const fields& fs, fmt::format_string<Args...> f, Args&&... args) {
  if (current_level() <= level::debug)
    write(level::debug, fmt::format(f, std::forward<Args>(args)...), fs);
}
template <typename... Args>
void info(const fields& fs, fmt::format_string<Args...> f, Args&&... args) {
  if (current_level() <= level::info)
    write(level::info, fmt::format(f, std::forward<Args>(args)...), fs);
}
template <typename... Args>
void warn(const fields& fs, fmt::format_string<Args...> f, Args&&... args) {
  if (current_level() <= level::warn)
    write(level::warn, fmt::format(f, std::forward<Args>(args)...), fs);
}
template <typename... Args>
void error(const fields& fs, fmt::format_string<Args...> f, Args&&... args) {
  write(level::error, fmt::format(f, std::forward<Args>(args)...), fs);
}

}  // namespace pushonce::log
