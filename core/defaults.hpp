#pragma once
// Defaults shared by the programs (docs/operations.md explains the memory they cost).

#include <chrono>

namespace pushonce::defaults {

/// How long a delivered id (claim record) and an idempotency key are remembered. Minutes,
/// not a day: Redis memory grows with rate × window (JetStream uses 2 min, Centrifugo 5).
inline constexpr std::chrono::milliseconds dedup_window{std::chrono::minutes(2)};
/// How long an outbox entry is kept for the recovery sweeper: by age (XADD MINID), so
/// fast traffic can never outrun it. A dozen default leases: workers may all be down this
/// long without a loss; an entry trimmed before the sweeper reached it is counted
/// (`retention_exceeded`). Shorter than the dedup window: the outbox holds the message
/// text and is the larger part of the memory a message costs.
inline constexpr std::chrono::milliseconds outbox_retention{std::chrono::seconds(60)};

}  // namespace pushonce::defaults
