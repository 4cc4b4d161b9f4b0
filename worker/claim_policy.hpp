#pragma once
// What a worker decides about a batch of bus messages, without Redis or timers (the
// resume_state shape): whether it races for a part before claim.lua, which owner a part
// claims with, what each claim outcome counts, which messages go to the dead-letter stream,
// when a whole payload earns its batch-done mark, and what is logged. bus_worker feeds it
// the payload, the race results and the claim outcomes, and carries out what it answers.
//
// Rules:
// - a batch reaches the claim by one of three paths: heard on the bus (each max_batch part
//   of 2 or more messages races first, claim_batch.lua), heard with its race already won
//   (the whole payload raced before it was parsed: its one part claims with the race's
//   owner, no second race), or re-driven by the sweeper (no race: it only re-drives entries
//   older than a lease, whose race key has expired; claim.lua alone keeps them single);
// - a race that fails to run leaves the decision to claim.lua: the part is claimed anyway;
// - a part whose race another worker won counts each message as lost ("taken");
// - a claim call that fails counts each message of its part as failed;
// - claim.lua's "won" (the lease, nothing delivered: over max attempts) is dead-lettered;
// - "expired" is counted and logged for a heard message only (the sweeper counts its own);
// - the batch-done mark is written for a whole payload of at least lua::mark_min_messages,
//   every message finished, heard (not re-driven), on a single Redis (not a cluster).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/lua/claim.hpp"
#include "core/message.hpp"

namespace pushonce::worker {

/// How a batch reached the claim.
enum class claim_path {
  heard,    // heard on the bus: each part races first (if big enough)
  raced,    // heard, and the race for the whole payload won by the caller's owner
  redrive,  // re-driven by the sweeper: no race
};

/// What the claim path adds to the worker's counters (worker_counters is one, and more).
struct claim_tally {
  std::uint64_t won = 0, lost = 0, delivered = 0, redelivered = 0, failed = 0, expired = 0,
                dead_lettered = 0;
  claim_tally& operator+=(const claim_tally& o);
  bool operator==(const claim_tally&) const = default;
};

/// A heard payload's lines parsed: the bus messages, and each line that is not one with why
/// (counted as failed, logged, skipped).
struct parsed_lines {
  std::vector<bus_message> messages;
  std::vector<std::pair<std::string, std::string_view>> malformed;  // (why, line)
  claim_tally tally;
};
parsed_lines parse_lines(std::span<const std::string_view> lines);

/// A heard payload that races whole before its lines are parsed (lua::race_before_parse):
/// its first message names the race. Never with `trace` (every worker then parses, to
/// record each message's outcome).
std::optional<bus_message> race_whole_payload(std::span<const std::string_view> lines,
                                              std::size_t max_batch, bool trace);

/// One claim.lua call's share of a batch.
struct claim_part {
  std::size_t begin = 0, size = 0;  // messages [begin, begin + size) of the batch
  bool new_owner = true;  // false: the owner that already won the race (first part of `raced`)
  bool race = false;      // race (claim_batch.lua) for it before claim.lua
  bool operator==(const claim_part&) const = default;
};
/// The parts of a batch of `messages`, at most `max_batch` (> 0) each, in order.
std::vector<claim_part> split_parts(std::size_t messages, claim_path path, std::size_t max_batch);

/// The race for a batch (claim_batch.lua): won, another worker won, or it did not run.
enum class race_result { won, lost, failed };
/// True when the part (or payload) goes on to claim.lua: won, or failed (claim.lua decides).
bool claims_after(race_result r);
/// A race lost by `messages` messages: each one counts as lost ("taken").
claim_tally lost_race(std::size_t messages);
/// A claim.lua call that failed for its part of `messages` messages.
claim_tally failed_claim(std::size_t messages);

/// What settle() asks the caller to log about one message.
enum class claim_note {
  none,
  delivery_failed,  // claim.lua could not write the inbox (the lease is kept for a retry)
  heard_expired,    // heard past the dedup window: not delivered, retention exceeded
};

/// One message's claim outcome, settled.
struct settlement {
  claim_tally tally;
  bool dead_letter = false;  // claim.lua "won": this worker holds the lease; dead-letter it
  claim_note note = claim_note::none;
  std::string_view trace_claim;     // the trace event of the claim: "claimed" | "reclaimed"
  std::string_view trace_delivery;  // "delivered" | "redelivered" when delivered, else empty
};
settlement settle(const lua::claim_outcome& o, claim_path path);

/// True when a claimed part earns the batch-done mark (lua::batch_done_command): it is the
/// whole batch (`part` == `whole`), at least lua::mark_min_messages, not re-driven, not on a
/// cluster (there the mark and the claim records are on different masters, and a failover
/// could keep the mark and lose the deliveries it stands for), every outcome finished.
bool writes_batch_mark(std::size_t part, std::size_t whole, claim_path path, bool cluster,
                       std::span<const lua::claim_outcome> outcomes);

/// The dead letter of a message claim.lua answered "won" with `number` (the attempts count
/// including this one): the attempts that delivered nothing and the entry's reason.
struct dead_letter_plan {
  long long attempts = 0;
  std::string reason;
};
dead_letter_plan plan_dead_letter(long long number);
/// dead_letter.lua's answer: counted only when it marked the message (the lease was live).
claim_tally dead_lettered(bool marked);

}  // namespace pushonce::worker
