#pragma once
// The decisions of the floor stand-in (`pushonce-bench floor`): a system that does no work.
// A publish gets ids and per-user offsets from memory and its frames go straight to the
// user's sessions; there is no Redis, no claim, no second process. Whatever latency the
// tool reports against it is the tool's own (and the kernel's loopback).
// --duplicate-every N makes it break its promise on purpose: every Nth frame goes out
// twice, which the verifier must report.

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace pushonce::bench {

class floor_logic {
 public:
  explicit floor_logic(std::uint64_t duplicate_every) : duplicate_every_(duplicate_every) {}

  struct delivery {
    std::string user;
    std::string frame;
    bool twice = false;
  };
  struct outcome {
    int status = 200;
    std::string body;  // the HTTP answer
    std::vector<delivery> deliveries;
  };
  /// POST /api/publish with `body` at `now_ms`.
  outcome publish(std::string_view body, std::int64_t now_ms);
  /// The welcome for a hello of `user`.
  std::string welcome(std::string_view user);

 private:
  std::uint64_t duplicate_every_;
  std::uint64_t next_id_ = 1, frames_ = 0;
  std::unordered_map<std::string, std::int64_t> offsets_;
};

}  // namespace pushonce::bench
