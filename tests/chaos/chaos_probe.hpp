#pragma once
// A synchronous look at Redis for the chaos run (hiredis, one pipeline at a time), which
// reconnects: Redis restarts under it.

#include <hiredis/hiredis.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tests/chaos/chaos_common.hpp"
#include "tests/support/sync_redis.hpp"

namespace pushonce::test::chaos {

class probe {
 public:
  explicit probe(std::uint16_t port) : port_(port) {}
  ~probe() { drop(); }
  probe(const probe&) = delete;
  probe& operator=(const probe&) = delete;

  /// The replies of several commands sent as one pipeline; throws redis_unreachable when
  /// Redis does not answer (after one reconnect).
  std::vector<reply_ptr> pipeline(const std::vector<words>& cmds) {
    for (int attempt = 0;; ++attempt) {
      try {
        return try_pipeline(cmds);
      } catch (const std::exception&) {
        drop();
        if (attempt >= 1) throw;
      }
    }
  }
  reply_ptr cmd(const words& w) { return std::move(pipeline({w}).front()); }
  long long integer(const words& w) {
    auto r = cmd(w);
    if (r->type == REDIS_REPLY_ERROR && std::string_view(r->str, r->len).starts_with("LOADING"))
      throw redis_unreachable("redis: loading");  // restarted, still reading its AOF
    if (r->type != REDIS_REPLY_INTEGER) throw std::runtime_error("redis: not an integer reply");
    return r->integer;
  }
  std::optional<std::string> string(const words& w) {
    auto r = cmd(w);
    if (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS)
      return std::string(r->str, r->len);
    return std::nullopt;
  }

 private:
  void drop() {
    if (ctx_) redisFree(ctx_);
    ctx_ = nullptr;
  }
  std::vector<reply_ptr> try_pipeline(const std::vector<words>& cmds);

  std::uint16_t port_;
  redisContext* ctx_ = nullptr;
};

struct stream_entry {
  std::string entry_id;
  std::map<std::string, std::string> fields;
};

// Every entry of a stream, read in pages.
std::vector<stream_entry> read_stream(probe& p, const std::string& key);

}  // namespace pushonce::test::chaos
