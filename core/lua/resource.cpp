#include "core/lua/resource.hpp"

#include "core/redis/failure_of.hpp"

namespace pushonce::lua {

resource_add_inputs resource_add_for(const keys& k, const std::string& queue,
                                     std::vector<std::string> ids, std::string meta_json) {
  return resource_add_inputs{.res_meta = k.queue(queue, "res:meta"),
                             .res_free = k.queue(queue, "res:free"),
                             .res_seq = k.queue(queue, "res:seq"),
                             .wake_channel = k.wake_channel(),
                             .queue = queue,
                             .meta = std::move(meta_json),
                             .more_args = std::move(ids)};
}

outcome<long long> resource_add_reply(const redis::result& r) {
  if (!r.ok()) return failure_of(r);
  return r.value.integer;
}

resource_remove_inputs resource_remove_for(const keys& k, const std::string& queue,
                                           std::string id) {
  return resource_remove_inputs{.res_meta = k.queue(queue, "res:meta"),
                                .res_free = k.queue(queue, "res:free"),
                                .res_holder = k.queue(queue, "res:holder"),
                                .assigned = k.queue(queue, "assigned"),
                                .pending = k.queue(queue, "pending"),
                                .pending_ids = k.queue(queue, "pending:ids"),
                                .admissions = k.queue(queue, "admissions"),
                                .leases = k.queue(queue, "leases"),
                                .id = std::move(id)};
}

resource_release_inputs resource_release_for(const keys& k, const std::string& queue,
                                             release_call c) {
  auto shared = resource_remove_for(k, queue, std::move(c.resource));  // the first seven keys
  return resource_release_inputs{.res_meta = std::move(shared.res_meta),
                                 .res_free = std::move(shared.res_free),
                                 .res_holder = std::move(shared.res_holder),
                                 .assigned = std::move(shared.assigned),
                                 .pending = std::move(shared.pending),
                                 .pending_ids = std::move(shared.pending_ids),
                                 .admissions = std::move(shared.admissions),
                                 .res_seq = k.queue(queue, "res:seq"),
                                 .leases = k.queue(queue, "leases"),
                                 .seq = k.queue(queue, "seq"),
                                 .outbox = k.queue(queue, "outbox"),
                                 .id = std::move(shared.id),
                                 .wake_channel = k.wake_channel(),
                                 .queue = queue,
                                 .source_arg = c.source ? std::to_string(*c.source) : "",
                                 .retention_arg = std::to_string(c.outbox_retention_ms),
                                 .bus_channel = k.bus_channel(),
                                 .admission_arg = std::move(c.admission),
                                 .reason = std::move(c.reason)};
}

/// resource_release.lua and resource_remove.lua answer OK or an error.
outcome<none> resource_done_reply(const redis::result& r) {
  if (!r.ok()) return failure_of(r);
  return none{};
}

outcome<release_reply> resource_release_reply(const redis::result& r) {
  if (!r.ok()) return failure_of(r);
  const auto& e = r.value.elements;
  if (e.size() != 5) return failure{errc::internal, "resource_release: unexpected reply"};
  return release_reply{e[0].str, e[1].str, e[2].str, e[3].str, e[4].str};
}

outcome<none> resource_remove_reply(const redis::result& r) {
  return resource_done_reply(r);
}

}  // namespace pushonce::lua
