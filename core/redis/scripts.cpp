#include "core/redis/scripts.hpp"

#include <openssl/evp.h>

#include <map>
#include <stdexcept>

#include "core/redis/script_sources.hpp"

namespace pushonce::redis {

namespace {

std::string sha1_hex(std::string_view text) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(text.data(), text.size(), digest, &len, EVP_sha1(), nullptr);
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(len * 2);
  for (unsigned i = 0; i < len; ++i) {
    out.push_back(hex[digest[i] >> 4]);
    out.push_back(hex[digest[i] & 15]);
  }
  return out;
}

const std::map<std::string, script, std::less<>>& registry() {
  static const auto all = [] {
    std::map<std::string, script, std::less<>> m;
    for (const auto& src : embedded_scripts()) {
      std::string text(src.text);
      m.emplace(std::string(src.name), script{std::string(src.name), text, sha1_hex(text)});
    }
    return m;
  }();
  return all;
}

// Outside the coroutine (GCC 12: docs/architecture.md "Coroutines and GCC 12").
command script_load_command(const script& s) {
  return {"SCRIPT", "LOAD", s.text};
}

}  // namespace

const script& get_script(std::string_view name) {
  const auto& all = registry();
  auto it = all.find(name);
  if (it == all.end()) throw std::out_of_range("no embedded Lua script named " + std::string(name));
  return it->second;
}

command evalsha_command(const script& s, const std::vector<std::string>& keys,
                        const std::vector<std::string>& args) {
  command cmd;
  cmd.reserve(3 + keys.size() + args.size());
  cmd.push_back("EVALSHA");
  cmd.push_back(s.sha1);
  cmd.push_back(std::to_string(keys.size()));
  cmd.insert(cmd.end(), keys.begin(), keys.end());
  cmd.insert(cmd.end(), args.begin(), args.end());
  return cmd;
}

namespace {
// Redis no longer has the script (a restart, SCRIPT FLUSH): load it and run it again.
bool is_noscript(const result& r) {
  return !r.ec && r.value.is_error() && r.value.error_code() == "NOSCRIPT";
}
}  // namespace

boost::asio::awaitable<result> eval(connection& conn, const script& s,
                                    std::vector<std::string> keys, std::vector<std::string> args) {
  // The command is moved into the connection (no copy kept); the rare NOSCRIPT retry
  // builds it again.
  auto cmd = evalsha_command(s, keys, args);
  auto res = co_await conn.exec(std::move(cmd));
  if (!is_noscript(res)) co_return res;
  auto loaded = co_await conn.exec(script_load_command(s));
  if (!loaded.ok()) co_return loaded;
  auto again = evalsha_command(s, keys, args);
  co_return co_await conn.exec(std::move(again));
}

boost::asio::awaitable<std::vector<result>> eval_all(connection& conn, const script& s,
                                                     std::vector<command> evalshas) {
  auto results = co_await conn.exec_all(evalshas);
  std::vector<command> again;
  std::vector<std::size_t> which;
  for (std::size_t i = 0; i < results.size(); ++i) {
    if (!is_noscript(results[i])) continue;
    again.push_back(std::move(evalshas[i]));
    which.push_back(i);
  }
  if (again.empty()) co_return results;
  auto loaded = co_await conn.exec(script_load_command(s));
  if (!loaded.ok()) co_return results;
  auto retried = co_await conn.exec_all(std::move(again));
  for (std::size_t j = 0; j < which.size(); ++j) results[which[j]] = std::move(retried[j]);
  co_return results;
}

}  // namespace pushonce::redis
