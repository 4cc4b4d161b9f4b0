#pragma once
// How long Redis remembers what each message costs (docs/operations.md "Redis memory"):
// common options of every program, so publishers, the leader and workers agree.

#include <chrono>

#include "core/defaults.hpp"

namespace pushonce {

struct retention {
  /// Claim records and idempotency keys (--dedup-window-ms, PUSHONCE_DEDUP_WINDOW_MS).
  std::chrono::milliseconds dedup_window = defaults::dedup_window;
  /// Outbox entries, trimmed by age (--outbox-retention-ms, PUSHONCE_OUTBOX_RETENTION_MS);
  /// never longer than the dedup window.
  std::chrono::milliseconds outbox = defaults::outbox_retention;
};

}  // namespace pushonce
