#include "gateway/limits/token_bucket.hpp"

#include <algorithm>

namespace pushonce::gateway {

token_bucket::token_bucket(double rate_per_s, double burst, clock::time_point now)
    : rate_(rate_per_s), burst_(std::max(burst, 1.0)), tokens_(burst_), last_(now) {}

void token_bucket::refill(clock::time_point now) {
  if (now <= last_) return;  // a clock that did not move (or went back) adds nothing
  std::chrono::duration<double> dt = now - last_;
  tokens_ = std::min(burst_, tokens_ + dt.count() * rate_);
  last_ = now;
}

bool token_bucket::take(clock::time_point now, double cost) {
  if (unlimited()) return true;
  refill(now);
  if (tokens_ < cost) return false;
  tokens_ -= cost;
  return true;
}

double token_bucket::available(clock::time_point now) {
  refill(now);
  return tokens_;
}

}  // namespace pushonce::gateway
