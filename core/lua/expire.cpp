#include "core/lua/expire.hpp"

namespace pushonce::lua {

expire_inputs expire_for(const keys& k, const std::string& queue, long long source,
                         long long fencing_token, std::chrono::milliseconds outbox_retention,
                         long long max) {
  return expire_inputs{.pending = k.queue(queue, "pending"),
                       .pending_ids = k.queue(queue, "pending:ids"),
                       .assigned = k.queue(queue, "assigned"),
                       .res_free = k.queue(queue, "res:free"),
                       .res_seq = k.queue(queue, "res:seq"),
                       .res_holder = k.queue(queue, "res:holder"),
                       .seq = k.queue(queue, "seq"),
                       .outbox = k.queue(queue, "outbox"),
                       .fence = k.queue(queue, "fence"),
                       .admissions = k.queue(queue, "admissions"),
                       .queue = queue,
                       .source_arg = std::to_string(source),
                       .token_arg = std::to_string(fencing_token),
                       .retention_arg = std::to_string(outbox_retention.count()),
                       .bus_channel = k.bus_channel(),
                       .wake_channel = k.wake_channel(),
                       .max_arg = std::to_string(max)};
}

std::vector<assignment> expire_reply_of(const redis::reply& r) {
  return assignments_of_reply(r, 4);
}

}  // namespace pushonce::lua
