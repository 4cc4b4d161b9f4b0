#include "core/redis/command_keys.hpp"

#include <cctype>
#include <charconv>

#include "core/redis/hash_slot.hpp"

namespace pushonce::redis {
namespace {

bool is(std::string_view word, std::string_view upper) {
  if (word.size() != upper.size()) return false;
  for (std::size_t i = 0; i < word.size(); ++i)
    if (std::toupper(static_cast<unsigned char>(word[i])) != upper[i]) return false;
  return true;
}

template <typename... Names>
bool is_one_of(std::string_view word, Names... names) {
  return (is(word, names) || ...);
}

bool keyless(std::string_view name) {
  return is_one_of(name, "PING", "TIME", "INFO", "CLUSTER", "CLIENT", "CONFIG", "DBSIZE", "PUBLISH",
                   "AUTH", "HELLO", "SELECT", "ECHO", "WAIT", "COMMAND", "LASTSAVE", "FLUSHALL",
                   "FLUSHDB", "ASKING", "READONLY", "PUBSUB", "SCAN", "KEYS", "RANDOMKEY", "MULTI",
                   "EXEC", "DISCARD", "SLOWLOG", "LATENCY");
}

}  // namespace

std::vector<std::string_view> command_keys(const command& cmd) {
  std::vector<std::string_view> out;
  if (cmd.empty()) return out;
  std::string_view name = cmd[0];
  if (keyless(name) || is_one_of(name, "SCRIPT", "FUNCTION")) return out;
  if (is_one_of(name, "EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO", "FCALL", "FCALL_RO")) {
    if (cmd.size() < 3) return out;
    std::size_t n = 0;
    auto [end, ec] = std::from_chars(cmd[2].data(), cmd[2].data() + cmd[2].size(), n);
    if (ec != std::errc{}) return out;
    for (std::size_t i = 3; i < cmd.size() && i < 3 + n; ++i) out.push_back(cmd[i]);
    return out;
  }
  if (is_one_of(name, "XREAD", "XREADGROUP")) {
    std::size_t at = 1;
    while (at < cmd.size() && !is(cmd[at], "STREAMS")) ++at;
    std::size_t rest = cmd.size() - std::min(cmd.size(), at + 1);
    for (std::size_t i = at + 1; i < at + 1 + rest / 2; ++i) out.push_back(cmd[i]);
    return out;
  }
  if (is_one_of(name, "XINFO", "OBJECT", "MEMORY")) {
    if (cmd.size() > 2) out.push_back(cmd[2]);
    return out;
  }
  if (is_one_of(name, "DEL", "UNLINK", "EXISTS", "MGET", "TOUCH", "WATCH")) {
    for (std::size_t i = 1; i < cmd.size(); ++i) out.push_back(cmd[i]);
    return out;
  }
  if (cmd.size() > 1) out.push_back(cmd[1]);
  return out;
}

command_route route_of(const command& cmd) {
  if (!cmd.empty() && is_one_of(cmd[0], "SCRIPT", "FUNCTION")) return {command_route::kind::all};
  auto keys = command_keys(cmd);
  if (keys.empty()) return {command_route::kind::any};
  return {command_route::kind::slot, hash_slot(keys.front())};
}

bool spans_slots(const command& cmd) {
  auto keys = command_keys(cmd);
  for (std::size_t i = 1; i < keys.size(); ++i)
    if (hash_slot(keys[i]) != hash_slot(keys[0])) return true;
  return false;
}

}  // namespace pushonce::redis
