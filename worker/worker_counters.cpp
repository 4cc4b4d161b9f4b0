#include "worker/worker_counters.hpp"

#include <fmt/format.h>

#include "core/metrics_text.hpp"

namespace pushonce::worker {

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

std::string worker_metrics_text(std::string_view id, const worker_counters& c) {
  const std::string labels = "worker=\"" + metric_label_value(id) + "\"";
  const std::pair<const char*, std::pair<std::uint64_t, const char*>> rows[] = {
      {"received", {c.received, "Bus messages this worker heard."}},
      {"won", {c.won, "Claims this worker won (it delivered the message)."}},
      {"lost", {c.lost, "Claims another worker had won or finished (duplicates not sent)."}},
      {"delivered", {c.delivered, "Messages this worker appended to inboxes."}},
      {"failed", {c.failed, "Claim calls that failed (Redis refused or did not answer)."}},
      {"dropped",
       {c.dropped, "Bus payloads dropped from memory over --max-queued-bytes (re-driven)."}},
      {"redelivered", {c.redelivered, "Messages this worker re-drove (sweeper, catch-up)."}},
      {"dead_lettered", {c.dead_lettered, "Messages this worker put in the dead letters."}},
      {"expired", {c.expired, "Messages heard too late to deliver safely."}},
      {"wait_replicas_timeout", {c.wait_replicas_timeout, "WAITs short of --wait-replicas."}},
  };
  std::string out;
  for (const auto& [name, v] : rows)
    out += metric_text(fmt::format("pushonce_worker_{}_total", name), "counter", v.second, labels,
                       static_cast<double>(v.first));
  return out;
}

}  // namespace pushonce::worker
