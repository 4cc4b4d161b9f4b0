#pragma once
// The sweeper's decisions for one outbox page, without Redis (the resume_state shape): which
// entries to look at, which to re-drive, which are lost to retention, and how far the
// outbox's cursor may move. The sweeper feeds it the page, the claim records and the
// re-drive outcomes, and carries out what it answers.
//
// Invariants:
// - entries younger than the lease are not looked at (the normal path may still be on
//   them); neither is anything after the first of them;
// - an entry is re-driven only while its claim record is certain to exist if it had been
//   delivered: younger than the dedup window minus two leases; an older entry that was
//   never delivered is counted as `expired` (retention exceeded) and never re-driven;
// - the cursor moves over the leading run of finished entries only (every message of the
//   entry delivered, dead, malformed or expired), so nothing unfinished is ever skipped;
// - a batch mark finishes an entry only when it counts every line of the entry and its
//   digest is the entry's.
//
// A catch-up plan (one with a deaf_window) is the sweep a worker runs at once when it hears
// a bus channel again after it could not (a lost connection, a channel moving to another
// master): the entries published while it was deaf are looked at whatever their age, since
// nobody may have heard them and the claim arbitrates with anyone who did. It looks at the
// window only and re-drives, nothing else: malformed lines, entries past retention and the
// cursor are left to the regular pass (which would otherwise count them twice).

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "core/lua/claim.hpp"
#include "core/message.hpp"

namespace pushonce::worker {

struct outbox_entry {
  std::string id;   // stream entry id "<ms>-<seq>"
  std::string raw;  // its "m" field: one bus message per line
};

/// Outbox entries trimmed before the cursor passed them: `added - length` entries were
/// trimmed (nothing else deletes outbox entries) and `passed` of them the sweepers had
/// finished; the rest were never checked. Without a record of `passed`: a fresh outbox
/// (no cursor) has passed nothing; an outbox swept before this count existed is swept again
/// from its start (claims outlive outbox entries, so that re-delivers nothing).
struct trimmed_count {
  long long lost = 0;    // entries never checked, now gone
  long long passed = 0;  // the new count of entries behind the cursor or trimmed
  bool rescan = false;   // forget the cursor
};
trimmed_count trimmed_unseen(long long added, long long length, bool has_cursor,
                             std::optional<long long> passed);

/// Stream times (ms, the Redis clock of the entry ids) of the outbox entries published while
/// a worker could not hear their bus channel: from_ms to until_ms, both included.
struct deaf_window {
  long long from_ms = 0;
  long long until_ms = 0;
  bool operator==(const deaf_window&) const = default;
};

/// The deaf window of a channel not heard from `deaf_since` until it was subscribed again at
/// `heard_again` (local steady-clock times), on the Redis clock: `redis_now_ms` was read at
/// `local_now`. Widened by `margin` on both ends (clock skew between the nodes, a connection
/// loss noticed late) and cut to what the catch-up is for: entries no older than
/// `window - 2 * lease` (older ones are past retention, the regular pass counts them) and no
/// later than `redis_now_ms`. std::nullopt when nothing is left.
std::optional<deaf_window> deaf_window_of(long long redis_now_ms,
                                          std::chrono::steady_clock::time_point local_now,
                                          std::chrono::steady_clock::time_point deaf_since,
                                          std::chrono::steady_clock::time_point heard_again,
                                          std::chrono::milliseconds margin,
                                          std::chrono::milliseconds lease,
                                          std::chrono::milliseconds window);

class sweep_plan {
 public:
  /// With `deaf`: a catch-up plan (see above).
  sweep_plan(std::chrono::milliseconds lease, std::chrono::milliseconds window, long long now_ms,
             std::optional<deaf_window> deaf = std::nullopt);

  /// Step 1: the page read after the cursor, in stream order.
  void take(std::vector<outbox_entry> page);
  /// Step 2a (optional): the first message of each entry whose first line is one, in
  /// order: NS:b:<its id> may hold the mark of a worker that claimed the entry's whole
  /// payload with every message finished (lua::batch_done_command).
  std::vector<const bus_message*> to_check_batches() const;
  /// One mark per to_check_batches() message (lua::parse_batch_done; std::nullopt: none,
  /// or unreadable). An entry whose lines are all bus messages, as many as the mark counts
  /// and with its digest (lua::batch_digest), is finished: its records are not read.
  void on_batch_marks(const std::vector<std::optional<lua::batch_mark>>& marks);
  /// The messages whose claim records step 2 needs, in order.
  std::vector<const bus_message*> to_check() const;
  /// Step 2: one record per to_check() message (std::nullopt: it could not be read).
  void on_records(const std::vector<std::optional<lua::claim_record>>& records);
  /// The messages to re-drive through claim.lua, in order.
  std::vector<bus_message> to_redrive() const;
  /// Step 3: the outcome of each to_redrive() message (std::nullopt: the call failed).
  void on_redriven(const std::vector<std::optional<lua::claim_outcome>>& outcomes);

  /// The new cursor: the last entry of the leading finished run ("" = do not move; always
  /// for a catch-up).
  std::string cursor() const;
  /// Malformed lines (not bus messages) as (entry id, text): dead-lettered by the caller
  /// (none for a catch-up).
  std::vector<std::pair<std::string, std::string>> malformed() const;

  /// Messages (lines) looked at.
  std::size_t looked_at() const { return items_.size(); }
  /// How many entries cursor() moves past.
  std::size_t passed() const;
  /// Entries looked at, and the id of the last one ("" when none).
  std::size_t entries() const { return entries_; }
  std::string last_id() const { return items_.empty() ? std::string() : items_.back().entry_id; }
  std::size_t redriven() const;
  std::size_t expired() const;

 private:
  enum class fate { unknown, finished, redrive, redriven, malformed, expired, blocked };
  struct item {
    std::string entry_id;
    std::string line;
    std::optional<bus_message> m;
    bool too_old = false;
    fate f = fate::unknown;
  };

  std::chrono::milliseconds lease_, window_;
  long long now_ms_;
  std::optional<deaf_window> deaf_;
  std::vector<item> items_;
  std::size_t entries_ = 0;
};

}  // namespace pushonce::worker
