#pragma once
// Signing admission tokens before the assignments exist (docs/architecture.md "Admission
// tokens"): assign.lua decides users, resources and ids inside Redis, so the leader first
// reads a plan (assign_plan.lua: the pairs and the id sequence assign.lua would use now),
// signs a token per pair, then runs assign.lua with the plan and the tokens; the script
// assigns only when the plan still holds, else nothing ({"stale"}) and the leader plans
// again. Socket-free: the reply's reading, the ids, the script's arguments, the records.

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pushonce::admission {

struct assign_plan {
  std::string seq;      // the queue's id sequence as assign_plan.lua read it ("0" when unset)
  long long stale = 0;  // heads assign.lua would drop (a reason to call it with no pairs)
  std::vector<std::pair<std::string, std::string>> pairs;  // user, resource, in order
  /// Nothing to assign and nothing to drop: assign.lua need not run.
  bool idle() const { return pairs.empty() && stale == 0; }
};

/// assign_plan.lua's reply {seq, stale, user1, resource1, ...} as strings; std::nullopt when
/// it is not that shape.
std::optional<assign_plan> plan_of_reply(const std::vector<std::string>& items);

/// The message id of pair `i` (0-based), as assign.lua makes it: (seq + i + 1) * 4096 + source.
std::string planned_id(const assign_plan& plan, std::size_t i, long long source);

/// The arguments appended to assign.lua after its ninth: the planned count, the seq, then
/// user, resource and token of each pair. `tokens` has one per pair.
std::vector<std::string> plan_args(const assign_plan& plan, const std::vector<std::string>& tokens);

/// A plan of many batches cut into assign.lua calls of at most `batch` pairs, in order: the
/// k-th call's seq is the plan's seq plus the pairs before it (the ids those calls take).
/// Only a plan with no stale heads can be cut (assign.lua drops stale heads of the first
/// `batch` only, so its pairs would not be the cut's); with stale heads, one part of at
/// most `batch` pairs (plan again with max = batch for the rest).
std::vector<assign_plan> split_plan(const assign_plan& plan, std::size_t batch);

/// An admission record (NS:{q:Q}:admissions, "state user resource").
struct record {
  std::string state;  // assigned, accepted, expired, released
  std::string user;
  std::string resource;
  std::optional<long long> expires_at = std::nullopt;  // the lease's end (ms), while live
};
std::optional<record> record_of(std::string_view text);

/// The source index in a message id's low 12 bits (the queue that made it), or -1 when the
/// id is not a decimal number.
long long source_of_id(std::string_view id);

/// A pass's resource name, "pass:<digits>" (an admission made by the rate, not a resource).
bool is_pass_name(std::string_view resource);

}  // namespace pushonce::admission
