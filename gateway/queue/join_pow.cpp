#include "gateway/queue/join_pow.hpp"

#include <boost/asio/detached.hpp>
#include <charconv>

#include "core/log.hpp"

namespace pushonce::gateway {

namespace asio = boost::asio;

join_pow::join_pow(std::shared_ptr<redis::connection> conn, keys k,
                   std::optional<std::string> secret, std::chrono::milliseconds ttl)
    : conn_(std::move(conn)), keys_(std::move(k)), ttl_(ttl) {
  if (secret && !secret->empty()) gate_ = std::make_shared<const pow_gate>(*secret, ttl_);
}

int join_pow::bits_of(const redis::reply& field) {
  if (!field.is_string()) return 0;
  int v = 0;
  const auto& s = field.str;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end != s.data() + s.size() || v < 0 || v > pow_gate::max_bits) return 0;
  return v;
}

asio::awaitable<int> join_pow::bits(std::string queue) {
  const auto now = std::chrono::steady_clock::now();
  std::optional<int> known;
  {
    std::lock_guard lock(mutex_);
    if (auto it = bits_.find(queue); it != bits_.end()) {
      known = it->second.bits;
      if (now - it->second.at < std::chrono::seconds(1)) co_return it->second.bits;
    }
  }
  redis::command get{"HGET", keys_.queue(queue, "settings"), "join_pow_bits"};
  auto r = co_await conn_->exec(std::move(get));
  if (!r.ok()) co_return known.value_or(0);
  int bits = bits_of(r.value);
  std::lock_guard lock(mutex_);
  if (bits_.size() >= max_cached && !bits_.contains(queue)) {
    // Full: what is past its second goes; if nothing is, everything goes (re-read at once).
    std::erase_if(bits_,
                  [&](const auto& e) { return now - e.second.at >= std::chrono::seconds(1); });
    if (bits_.size() >= max_cached) bits_.clear();
  }
  bits_[queue] = cached{bits, now};
  co_return bits;
}

asio::awaitable<std::shared_ptr<const pow_gate>> join_pow::gate() {
  {
    std::lock_guard lock(mutex_);
    if (gate_) co_return gate_;
  }
  // One random secret for every gateway of the namespace: the first one to ask creates it.
  auto key = keys_.plain("pow:secret");
  std::vector<redis::command> cmds;
  cmds.push_back({"SET", key, random_hex_secure(32), "NX"});
  cmds.push_back({"GET", key});
  auto rs = co_await conn_->exec_all(std::move(cmds));
  if (rs.size() != 2 || !rs[1].ok() || !rs[1].value.is_string() || rs[1].value.str.empty()) {
    log::warn("proof of work: the shared secret could not be read from Redis");
    co_return nullptr;
  }
  std::lock_guard lock(mutex_);
  if (!gate_) gate_ = std::make_shared<const pow_gate>(rs[1].value.str, ttl_);
  co_return gate_;
}

pow_challenge join_pow::issue(const pow_gate& g, const std::string& user, const std::string& queue,
                              int bits) {
  auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                 std::chrono::system_clock::now().time_since_epoch())
                 .count();
  return g.issue(user, queue, bits, now, random_hex_secure(12));
}

void join_pow::count_refusal(const std::string& queue) {
  conn_->async_exec(redis::command{"HINCRBY", keys_.queue(queue, "stats"), "refused_pow", "1"},
                    asio::detached);
}

}  // namespace pushonce::gateway
