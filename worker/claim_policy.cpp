#include "worker/claim_policy.hpp"

#include <algorithm>

namespace pushonce::worker {

claim_tally& claim_tally::operator+=(const claim_tally& o) {
  won += o.won;
  lost += o.lost;
  delivered += o.delivered;
  redelivered += o.redelivered;
  failed += o.failed;
  expired += o.expired;
  dead_lettered += o.dead_lettered;
  return *this;
}

parsed_lines parse_lines(std::span<const std::string_view> lines) {
  parsed_lines out;
  out.messages.reserve(lines.size());
  for (auto line : lines) {
    std::string why;
    auto m = parse_bus_message(line, &why);
    if (!m) {
      ++out.tally.failed;
      out.malformed.emplace_back(std::move(why), line);
      continue;
    }
    out.messages.push_back(std::move(*m));
  }
  return out;
}

std::optional<bus_message> race_whole_payload(std::span<const std::string_view> lines,
                                              std::size_t max_batch, bool trace) {
  if (trace) return std::nullopt;
  return lua::race_before_parse(lines, max_batch);
}

std::vector<claim_part> split_parts(std::size_t messages, claim_path path, std::size_t max_batch) {
  std::vector<claim_part> parts;
  if (max_batch == 0) max_batch = 1;
  for (std::size_t at = 0; at < messages; at += max_batch) {
    claim_part p;
    p.begin = at;
    p.size = std::min(max_batch, messages - at);
    p.new_owner = path != claim_path::raced || at > 0;
    p.race = path == claim_path::heard && p.size >= lua::race_min_messages;
    parts.push_back(p);
  }
  return parts;
}

bool claims_after(race_result r) {
  return r != race_result::lost;
}

claim_tally lost_race(std::size_t messages) {
  claim_tally t;
  t.lost = messages;
  return t;
}

claim_tally failed_claim(std::size_t messages) {
  claim_tally t;
  t.failed = messages;
  return t;
}

settlement settle(const lua::claim_outcome& o, claim_path path) {
  using st = lua::claim_state;
  const bool redrive = path == claim_path::redrive;
  settlement s;
  s.trace_claim = redrive ? "reclaimed" : "claimed";
  switch (o.state) {
    case st::delivered:
      s.tally.won = 1;
      s.tally.delivered = 1;
      if (redrive) s.tally.redelivered = 1;
      s.trace_delivery = redrive ? "redelivered" : "delivered";
      break;
    case st::done:
    case st::taken:
      s.tally.lost = 1;
      break;
    case st::dead:
      break;
    case st::won:
      s.tally.won = 1;
      s.dead_letter = true;
      break;
    case st::failed:
      s.tally.failed = 1;
      s.note = claim_note::delivery_failed;
      break;
    case st::expired:
      // The sweeper counts its own (sweep_plan); a bus message this old means this worker
      // was paused or backlogged past the dedup window.
      if (!redrive) {
        s.tally.expired = 1;
        s.note = claim_note::heard_expired;
      }
      break;
  }
  return s;
}

bool writes_batch_mark(std::size_t part, std::size_t whole, claim_path path, bool cluster,
                       std::span<const lua::claim_outcome> outcomes) {
  return path != claim_path::redrive && !cluster && part == whole &&
         part >= lua::mark_min_messages && lua::batch_finished(outcomes);
}

dead_letter_plan plan_dead_letter(long long number) {
  return {number - 1, "not delivered after " + std::to_string(number - 1) + " attempts"};
}

claim_tally dead_lettered(bool marked) {
  claim_tally t;
  if (marked) t.dead_lettered = 1;
  return t;
}

}  // namespace pushonce::worker
