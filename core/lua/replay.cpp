#include "core/lua/replay.hpp"

#include "core/lua/claim.hpp"

namespace pushonce::lua {

replay_inputs replay_for(const keys& k, bool cluster, const replay_request& r) {
  // The record's field binds the message's user and frame (record_field); the line names
  // both. A line that does not parse names the bare id (no record is found under it).
  auto m = parse_bus_message(r.message);
  record_ref ref = r.record ? *r.record
                            : record_ref{k.claim_bucket(r.user, r.id),
                                         m ? record_field(r.user, r.id, m->tail) : r.id};
  // On a Redis Cluster the stream and the outbox are other slots: only the bucket is given.
  replay_inputs in{.bucket = std::move(ref.key),
                   .stream = cluster ? "" : k.plain("dead-letters"),
                   .outbox = cluster || r.entries.empty() ? "" : r.outbox,
                   .field_arg = std::move(ref.field),
                   .window_arg = std::to_string(r.dedup_window.count()),
                   .channel = k.bus_channel(),
                   .m = r.message,
                   .more_args = r.entries};
  return in;
}

std::vector<redis::command> replay_followups(const keys& k, const replay_request& r) {
  redis::command del{"XDEL", k.plain("dead-letters")};
  del.insert(del.end(), r.entries.begin(), r.entries.end());
  return {{"XADD", r.outbox, "*", "m", r.message},
          {"PUBLISH", k.bus_channel(), r.message},
          std::move(del)};
}

}  // namespace pushonce::lua
