#pragma once
// Where a deployment's keys are depends on --bus-shards (a user's keys live in its shard):
// every process of one namespace must run with the same number. The first process to
// reach Redis records it in NS:layout; every heartbeat compares its own with it.

#include <optional>
#include <string>
#include <string_view>

#include "core/keys.hpp"
#include "core/redis/reply.hpp"

namespace pushonce {

/// SET NS:layout "bus-shards=N" NX GET PX 10000: records this process's layout when none
/// is, and answers the one recorded before (nil when this call recorded it). The record
/// lives while processes run: every heartbeat renews it (layout_renew_command), so once a
/// namespace's processes are all stopped it can be started with another number.
redis::command layout_command(const keys& k);

/// PEXPIRE NS:layout 10000: keeps the record while this process runs.
redis::command layout_renew_command(const keys& k);

/// The error to stop with when `recorded` (NS:layout's value) is not this process's
/// layout; std::nullopt when it matches or nothing was recorded before.
std::optional<std::string> layout_conflict(const keys& k, std::optional<std::string_view> recorded);

}  // namespace pushonce
