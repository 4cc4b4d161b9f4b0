#pragma once
// The Lua scripts of lua/ called through the core (redis::get_script + redis::eval), with
// the KEYS/ARGV of docs/data-model.md. Keys and arguments are built here, outside the
// callers' co_await (GCC 12).

#include <boost/asio/awaitable.hpp>
#include <string>
#include <vector>

#include "core/keys.hpp"
#include "core/redis/connection.hpp"
#include "core/redis/scripts.hpp"
#include "tests/integration/run_async.hpp"

namespace pushonce::test {

inline boost::asio::awaitable<redis::result> run_script(redis::connection& c, std::string name,
                                                        std::vector<std::string> keys,
                                                        std::vector<std::string> args) {
  const auto& s = redis::get_script(name);
  CO_LET(auto r, redis::eval(c, s, std::move(keys), std::move(args)));
  co_return r;
}

/// claim.lua on NS:{u:USER}:claim:ID.
inline boost::asio::awaitable<redis::result> claim(redis::connection& c, keys k, std::string user,
                                                   std::string id, std::string owner,
                                                   long long lease_ms,
                                                   long long window_ms = 60000) {
  std::vector<std::string> ks{k.claim(user, id)};
  std::vector<std::string> as{std::move(owner), std::to_string(lease_ms),
                              std::to_string(window_ms)};
  CO_LET(auto r, run_script(c, "claim", std::move(ks), std::move(as)));
  co_return r;
}

struct deliver_args {
  std::string head;
  std::string tail;
  std::string epoch = "E1";
  long long window_ms = 60000;
  long long inbox_maxlen = 1000;
  long long idle_ms = 600000;
};

/// deliver.lua for message ID to USER by OWNER.
inline boost::asio::awaitable<redis::result> deliver(redis::connection& c, keys k, std::string user,
                                                     std::string id, std::string owner,
                                                     deliver_args d) {
  std::vector<std::string> ks{k.claim(user, id), k.user(user, "meta"), k.user(user, "inbox"),
                              k.user_channel(user)};
  std::vector<std::string> as{std::move(owner),
                              std::move(d.head),
                              std::move(d.tail),
                              std::to_string(d.window_ms),
                              std::to_string(d.inbox_maxlen),
                              std::to_string(d.idle_ms),
                              std::move(d.epoch)};
  CO_LET(auto r, run_script(c, "deliver", std::move(ks), std::move(as)));
  co_return r;
}

/// ack.lua; epoch empty: none given.
inline boost::asio::awaitable<redis::result> ack(redis::connection& c, keys k, std::string user,
                                                 std::string offset, std::string epoch = {}) {
  std::vector<std::string> ks{k.user(user, "meta")};
  std::vector<std::string> as{std::move(offset)};
  if (!epoch.empty()) as.push_back(std::move(epoch));
  CO_LET(auto r, run_script(c, "ack", std::move(ks), std::move(as)));
  co_return r;
}

/// session.lua; idle_ms < 0: argument not given.
inline boost::asio::awaitable<redis::result> session(redis::connection& c, keys k, std::string user,
                                                     std::string epoch, long long idle_ms = -1) {
  std::vector<std::string> ks{k.user(user, "meta")};
  std::vector<std::string> as{std::move(epoch)};
  if (idle_ms >= 0) as.push_back(std::to_string(idle_ms));
  CO_LET(auto r, run_script(c, "session", std::move(ks), std::move(as)));
  co_return r;
}

}  // namespace pushonce::test
