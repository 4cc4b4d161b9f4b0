#include "core/log.hpp"

#include <atomic>
#include <boost/json/serialize.hpp>
#include <boost/json/string.hpp>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <stdexcept>
#include <string>

namespace pushonce::log {
namespace {

std::atomic<level> g_level{level::info};
std::atomic<format> g_format{format::text};
std::mutex g_mutex;  // guards g_program / g_instance and serialises writes
std::string g_program;
std::string g_instance;

std::string_view level_name(level l) {
  switch (l) {
    case level::debug:
      return "debug";
    case level::info:
      return "info";
    case level::warn:
      return "warn";
    case level::error:
      return "error";
  }
  return "?";
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

// A JSON string literal (quotes, backslashes and control characters escaped by Boost.JSON).
void append_json_string(std::string& out, std::string_view s) {
  out += boost::json::serialize(boost::json::string(s));
}

// A text-format value: bare when it is one plain word, else quoted like a JSON string so
// that a line stays one line and fields stay apart.
void append_text_value(std::string& out, std::string_view s) {
  bool plain = !s.empty();
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || c == '"' || c == '=' || c == '\\' || u == 0x7f) {
      plain = false;
      break;
    }
  }
  if (plain)
    out += s;
  else
    append_json_string(out, s);
}

// A text-format message as one line that user strings in it (ids, user and queue names)
// cannot break or forge: control bytes become \xNN (\n, \r, \t by name), a backslash
// is doubled, and the Unicode line separators (U+0085, U+2028, U+2029) become \uNNNN.
void append_one_line(std::string& out, std::string_view s) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    auto u = static_cast<unsigned char>(s[i]);
    if (u == '\n') {
      out += "\\n";
    } else if (u == '\r') {
      out += "\\r";
    } else if (u == '\t') {
      out += "\\t";
    } else if (u == '\\') {
      out += "\\\\";
    } else if (u < 0x20 || u == 0x7f) {
      out += fmt::format("\\x{:02x}", u);
    } else if (u == 0xc2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) == 0x85) {
      out += "\\u0085";
      ++i;
    } else if (u == 0xe2 && i + 2 < s.size() && static_cast<unsigned char>(s[i + 1]) == 0x80 &&
               (static_cast<unsigned char>(s[i + 2]) == 0xa8 ||
                static_cast<unsigned char>(s[i + 2]) == 0xa9)) {
      out += static_cast<unsigned char>(s[i + 2]) == 0xa8 ? "\\u2028" : "\\u2029";
      i += 2;
    } else {
      out += s[i];
    }
  }
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

format parse_format(std::string_view text) {
  if (text == "text") return format::text;
  if (text == "json") return format::json;
  throw std::invalid_argument(fmt::format("bad log format '{}' (expected text or json)", text));
}

void set_level(level l) {
  g_level.store(l, std::memory_order_relaxed);
}

level current_level() {
  return g_level.load(std::memory_order_relaxed);
}

void set_format(format f) {
  g_format.store(f, std::memory_order_relaxed);
}

format current_format() {
  return g_format.load(std::memory_order_relaxed);
}

void set_identity(std::string program, std::string instance) {
  std::lock_guard lock(g_mutex);
  g_program = std::move(program);
  g_instance = std::move(instance);
}

void set_tag(std::string tag) {
  auto open = tag.find('[');
  if (open != std::string::npos && !tag.empty() && tag.back() == ']')
    set_identity(tag.substr(0, open), tag.substr(open + 1, tag.size() - open - 2));
  else
    set_identity(std::move(tag), {});
}

std::string format_line(format f, std::string_view time, level l, std::string_view program,
                        std::string_view instance, std::string_view text, const fields& extra) {
  std::string line;
  line.reserve(64 + text.size());
  if (f == format::json) {
    line += "{\"time\":";
    append_json_string(line, time);
    line += ",\"level\":";
    append_json_string(line, level_name(l));
    if (!program.empty()) {
      line += ",\"program\":";
      append_json_string(line, program);
    }
    if (!instance.empty()) {
      line += ",\"instance\":";
      append_json_string(line, instance);
    }
    line += ",\"message\":";
    append_json_string(line, text);
    for (const auto& fd : extra) {
      line += ',';
      append_json_string(line, fd.key);
      line += ':';
      if (const auto* s = std::get_if<std::string>(&fd.value))
        append_json_string(line, *s);
      else
        line += std::to_string(std::get<long long>(fd.value));
    }
    line += "}\n";
    return line;
  }
  line += time;
  line += ' ';
  auto name = level_name(l);
  line += name;
  line.append(6 - name.size(), ' ');
  if (!program.empty()) {
    line += program;
    if (!instance.empty()) {
      line += '[';
      line += instance;
      line += ']';
    }
    line += ": ";
  }
  append_one_line(line, text);
  for (const auto& fd : extra) {
    line += ' ';
    line += fd.key;
    line += '=';
    if (const auto* s = std::get_if<std::string>(&fd.value))
      append_text_value(line, *s);
    else
      line += std::to_string(std::get<long long>(fd.value));
  }
  line += '\n';
  return line;
}

void write(level l, std::string_view text, const fields& extra) {
  if (l < current_level()) return;
  auto time = timestamp();
  std::lock_guard lock(g_mutex);
  auto line = format_line(current_format(), time, l, g_program, g_instance, text, extra);
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

}  // namespace pushonce::log
