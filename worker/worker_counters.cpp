#include "worker/worker_counters.hpp"

namespace pushonce::worker {

worker_counters& worker_counters::operator+=(const claim_tally& t) {
  won += t.won;
  lost += t.lost;
  delivered += t.delivered;
  redelivered += t.redelivered;
  failed += t.failed;
  expired += t.expired;
  dead_lettered += t.dead_lettered;
  return *this;
}

std::vector<std::pair<std::string_view, std::uint64_t>> stats_increments(
    const worker_counters& now, const worker_counters& flushed) {
  std::vector<std::pair<std::string_view, std::uint64_t>> out;
  auto add = [&](std::string_view field, std::uint64_t current, std::uint64_t done) {
    if (current > done) out.emplace_back(field, current - done);
  };
  add("delivered", now.delivered, flushed.delivered);
  add("duplicates_suppressed", now.lost, flushed.lost);
  add("redelivered", now.redelivered, flushed.redelivered);
  add("dead_lettered", now.dead_lettered, flushed.dead_lettered);
  add("dead_letters_trimmed", now.dead_letters_trimmed, flushed.dead_letters_trimmed);
  add("retention_exceeded", now.expired, flushed.expired);
  add("wait_replicas_timeout", now.wait_replicas_timeout, flushed.wait_replicas_timeout);
  return out;
}

}  // namespace pushonce::worker
