#pragma once
// The Lua scripts of lua/ called through the core: claim.lua with the core's own builder
// (core/lua/claim.hpp, core/lua/session.hpp) where a builder exists; run_script for tests
// that send a script arguments no builder would (bad numbers). Commands are built here,
// outside the callers' co_await (GCC 12: docs/architecture.md "Coroutines and GCC 12").

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <string>
#include <vector>

#include "core/keys.hpp"
#include "core/lua/claim.hpp"
#include "core/lua/session.hpp"
#include "core/message.hpp"
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

/// Now, in ms since the epoch: a publish time claim.lua takes as recent (the test's Redis
/// runs on this machine's clock).
inline long long now_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

/// A bus message of `user` in the scripts' own layout (what publish.lua writes), parsed
/// as a worker parses it; published now unless `ts` says when.
inline bus_message bus_msg(const std::string& id, const std::string& user,
                           const std::string& data = "1", const std::string& kind = "message",
                           long long ts = now_ms(), const std::string& src = "bus:0") {
  auto text = R"({"id":")" + id + R"(","user":")" + user + R"(","src":")" + src + R"(","kind":")" +
              kind + R"(","data":)" + data + R"(,"ts":)" + std::to_string(ts) + "}";
  auto m = parse_bus_message(text);
  if (!m) throw std::runtime_error("bus_msg: not a bus message: " + text);
  return *m;
}

/// claim.lua settings for tests: a 60 s dedup window, epoch "E1".
inline lua::claim_settings claim_opts(std::string owner, long long lease_ms = 5000,
                                      long long max_attempts = 5, long long window_ms = 60000) {
  lua::claim_settings s;
  s.owner = std::move(owner);
  s.lease = std::chrono::milliseconds(lease_ms);
  s.dedup_window = std::chrono::milliseconds(window_ms);
  s.max_attempts = max_attempts;
  s.inbox_maxlen = 1000;
  s.inbox_idle = std::chrono::minutes(10);
  s.epoch = "E1";
  return s;
}

/// Where claim.lua keeps the record of message `m` on the tests' single Redis: a field of its
/// bucket bound to the user and the frame (read it with lua::record_read).
inline lua::record_ref record_at(const keys& k, const bus_message& m) {
  return lua::claim_record_ref(k, m);
}

/// The record of message `id` to `user` of bus_msg's default shape (kind "message", data 1).
inline lua::record_ref record_at(const keys& k, const std::string& user, const std::string& id) {
  return record_at(k, bus_msg(id, user));
}

/// DEL or HDEL of a claim record (a failover that lost it).
inline redis::command record_forget(const lua::record_ref& r) {
  if (r.field.empty()) return {"DEL", r.key};
  return {"HDEL", r.key, r.field};
}

/// claim.lua for a batch, built by lua::claim_for and run by lua::run_script (which loads
/// the script on NOSCRIPT, as the worker does).
inline boost::asio::awaitable<redis::result> claim(redis::connection& c, keys k,
                                                   lua::claim_settings s,
                                                   std::vector<bus_message> batch,
                                                   std::vector<bool> lease_only = {}) {
  auto in = lua::claim_for(k, s, batch, lease_only);
  CO_LET(auto r, lua::run_script(c, std::move(in)));
  co_return r;
}

/// One message: claim.lua with a batch of one.
inline boost::asio::awaitable<redis::result> claim_one(redis::connection& c, keys k,
                                                       lua::claim_settings s, bus_message m,
                                                       bool lease_only = false) {
  std::vector<bus_message> batch;
  batch.push_back(std::move(m));
  std::vector<bool> lo{lease_only};
  CO_LET(auto r, claim(c, std::move(k), std::move(s), std::move(batch), std::move(lo)));
  co_return r;
}

/// A claim.lua result as words, one per message ("delivered 1", "taken 0",
/// "failed <error>"), through lua::parse_claim_reply; one error word otherwise.
inline std::vector<std::string> outcomes_of(const redis::result& r, std::size_t messages) {
  if (r.ec) return {"transport error: " + r.ec.message()};
  if (r.value.is_error()) return {"error: " + r.value.str};
  auto parsed = lua::parse_claim_reply(r.value, messages);
  if (!parsed) return {"unexpected reply"};
  std::vector<std::string> out;
  for (const auto& o : *parsed)
    out.push_back(std::string(lua::to_string(o.state)) + " " +
                  (o.state == lua::claim_state::failed ? o.error : std::to_string(o.number)));
  return out;
}

/// The outcome of a batch of one ("delivered 1").
inline std::string outcome_of(const redis::result& r) {
  auto o = outcomes_of(r, 1);
  return o.size() == 1 ? o.front() : "unexpected reply";
}

/// ack.lua (lua::ack_for); epoch empty: none given.
inline boost::asio::awaitable<redis::result> ack(redis::connection& c, keys k, std::string user,
                                                 long long offset, std::string epoch = {}) {
  auto in = lua::ack_for(k, user, offset,
                         epoch.empty() ? std::nullopt : std::optional<std::string>(epoch));
  CO_LET(auto r, lua::run_script(c, std::move(in)));
  co_return r;
}

/// session.lua (lua::session_for); idle_ms < 0: no idle ttl; since: the client's.
inline boost::asio::awaitable<redis::result> session(
    redis::connection& c, keys k, std::string user, std::string epoch, long long idle_ms = -1,
    std::optional<lua::session_since> since = std::nullopt) {
  auto idle = idle_ms < 0
                  ? std::nullopt
                  : std::optional<std::chrono::milliseconds>(std::chrono::milliseconds(idle_ms));
  auto in = lua::session_for(k, user, epoch, idle, since);
  CO_LET(auto r, lua::run_script(c, std::move(in)));
  co_return r;
}

/// release.lua (lua::release_for): hands back OWNER's lease on message m.
inline boost::asio::awaitable<redis::result> release(redis::connection& c, keys k,
                                                     const bus_message& m, std::string owner) {
  CO_LET(auto r, lua::run_script(c, lua::release_for(k, m, owner)));
  co_return r;
}

/// dead_letter.lua (lua::dead_letter_for): OWNER (holding the lease) marks m dead (and,
/// on a single Redis, adds its dead-letter entry with `attempts`).
inline boost::asio::awaitable<redis::result> mark_dead(
    redis::connection& c, keys k, const bus_message& m, std::string owner, std::string reason,
    long long window_ms = 60000, long long attempts = 1, bool cluster = false) {
  auto in = lua::dead_letter_for(k, cluster, m, owner, reason, std::chrono::milliseconds(window_ms),
                                 attempts);
  CO_LET(auto r, lua::run_script(c, std::move(in)));
  co_return r;
}

/// 1 when dead_letter.lua's reply says marked, 0 when refused, -1 for anything else.
inline int marked_of(const redis::result& r) {
  auto d = r.ok() ? lua::parse_dead_letter_reply(r.value) : std::nullopt;
  return d ? (d->marked ? 1 : 0) : -1;
}

}  // namespace pushonce::test
