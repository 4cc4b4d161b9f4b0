#include "core/env_file.hpp"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "core/config.hpp"

namespace pushonce {

namespace {

std::string_view env_trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

bool env_name_ok(std::string_view k) {
  if (k.empty() || (k[0] >= '0' && k[0] <= '9')) return false;
  for (char c : k)
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'))
      return false;
  return true;
}

bool env_readable(const std::string& p) {
  return ::access(p.c_str(), R_OK) == 0;
}

bool env_is_set(const char* name) {
  const char* v = std::getenv(name);
  return v && *v;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> parse_env_file(std::string_view text) {
  std::vector<std::pair<std::string, std::string>> out;
  std::size_t number = 0;
  while (!text.empty()) {
    auto nl = text.find('\n');
    auto line = env_trim(text.substr(0, nl));
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    ++number;
    if (line.empty() || line.front() == '#' || line.front() == ';') continue;
    if (line.rfind("export ", 0) == 0) line = env_trim(line.substr(7));
    auto eq = line.find('=');
    auto key = eq == std::string_view::npos ? line : env_trim(line.substr(0, eq));
    if (eq == std::string_view::npos || !env_name_ok(key))
      throw std::invalid_argument("line " + std::to_string(number) + ": expected NAME=VALUE");
    auto value = env_trim(line.substr(eq + 1));
    if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') &&
        value.back() == value.front())
      value = value.substr(1, value.size() - 2);
    out.emplace_back(std::string(key), std::string(value));
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> env_file_assignments(
    const std::vector<std::pair<std::string, std::string>>& parsed,
    bool (*is_set)(const char* name)) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [k, v] : parsed) {
    if (k.rfind("PUSHONCE_", 0) != 0) continue;
    if (k == "PUSHONCE_LOG_FORMAT" || k == "PUSHONCE_LOG_LEVEL") continue;
    if (is_set(k.c_str())) continue;
    out.emplace_back(k, v);
  }
  return out;
}

std::optional<std::string> load_env_file(const std::string& path) {
  const bool explicit_file = !path.empty();
  std::string file = explicit_file ? path : "/etc/pushonce/pushonce.env";
  if (!explicit_file && !env_readable(file)) return std::nullopt;
  std::ifstream in(file);
  if (!in) throw usage_error("--env-file: cannot read " + file);
  std::stringstream buf;
  buf << in.rdbuf();
  std::vector<std::pair<std::string, std::string>> parsed;
  try {
    parsed = parse_env_file(buf.str());
  } catch (const std::invalid_argument& e) {
    throw usage_error("--env-file: " + file + ": " + e.what());
  }
  for (const auto& [k, v] : env_file_assignments(parsed, env_is_set))
    ::setenv(k.c_str(), v.c_str(), 1);
  // The units' credentials (LoadCredential=), for a CLI run by root on that host.
  auto dir =
      file.substr(0, file.find_last_of('/') == std::string::npos ? 0 : file.find_last_of('/'));
  auto secret = [&](const char* name) { return (dir.empty() ? "." : dir) + "/secrets/" + name; };
  if (!env_is_set("PUSHONCE_REDIS") && !env_is_set("PUSHONCE_REDIS_FILE") &&
      !env_is_set("PUSHONCE_REDIS_CLUSTER") && !env_is_set("PUSHONCE_REDIS_SENTINEL") &&
      env_readable(secret("redis_url")))
    ::setenv("PUSHONCE_REDIS_FILE", secret("redis_url").c_str(), 1);
  if (!env_is_set("PUSHONCE_JWT_SECRET") && !env_is_set("PUSHONCE_JWT_SECRET_FILE") &&
      env_readable(secret("jwt_secret")))
    ::setenv("PUSHONCE_JWT_SECRET_FILE", secret("jwt_secret").c_str(), 1);
  return file;
}

}  // namespace pushonce
