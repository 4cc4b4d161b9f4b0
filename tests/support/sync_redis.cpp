#include "tests/support/sync_redis.hpp"

#include <unistd.h>

#include <atomic>
#include <stdexcept>
#include <thread>

namespace pushonce::test {

sync_redis::sync_redis(std::uint16_t port) {
  timeval tv{5, 0};
  ctx_ = redisConnectWithTimeout("127.0.0.1", port, tv);
  if (ctx_ == nullptr || ctx_->err)
    throw redis_unreachable("cannot connect to redis: " +
                            std::string(ctx_ ? ctx_->errstr : "out of memory"));
  redisSetTimeout(ctx_, tv);
}

sync_redis::~sync_redis() {
  redisFree(ctx_);
}

reply_ptr sync_redis::cmd(const std::vector<std::string>& words) {
  std::vector<const char*> argv;
  std::vector<size_t> lens;
  for (auto& w : words) {
    argv.push_back(w.data());
    lens.push_back(w.size());
  }
  auto* r = static_cast<redisReply*>(
      redisCommandArgv(ctx_, static_cast<int>(argv.size()), argv.data(), lens.data()));
  if (r == nullptr) throw redis_unreachable("redis: " + std::string(ctx_->errstr));
  return reply_ptr(r);
}

long long sync_redis::integer(const std::vector<std::string>& words) {
  auto r = cmd(words);
  if (r->type == REDIS_REPLY_INTEGER) return r->integer;
  if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
      r->element[1]->type == REDIS_REPLY_INTEGER)
    return r->element[1]->integer;  // PUBSUB NUMSUB channel
  return -1;
}

std::string sync_redis::text(const std::vector<std::string>& words) {
  auto r = cmd(words);
  if (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS) return {r->str, r->len};
  return {};
}

long long sync_redis::subscribers(const std::string& channel) {
  return integer({"PUBSUB", "NUMSUB", channel});
}

std::vector<std::pair<std::string, std::string>> sync_redis::inbox(const std::string& key) {
  std::vector<std::pair<std::string, std::string>> out;
  auto r = cmd({"XRANGE", key, "-", "+"});
  for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i < r->elements; ++i) {
    auto* e = r->element[i];
    std::string id(e->element[0]->str, e->element[0]->len);
    std::string f;
    auto* fields = e->element[1];
    for (size_t j = 0; j + 1 < fields->elements; j += 2)
      if (std::string(fields->element[j]->str, fields->element[j]->len) == "f")
        f.assign(fields->element[j + 1]->str, fields->element[j + 1]->len);
    out.emplace_back(std::move(id), std::move(f));
  }
  return out;
}

std::string unique_namespace(const std::string& prefix, const std::string& what) {
  static std::atomic<unsigned> n{0};
  return prefix + "-" + what + "-" + std::to_string(::getpid()) + "-" + std::to_string(++n);
}

}  // namespace pushonce::test
