#include "core/lua/resource.hpp"

#include "core/redis/failure_of.hpp"

namespace pushonce::lua {

resource_add_input resource_add_for(const keys& k, const std::string& queue,
                                    std::vector<std::string> ids, std::string meta_json) {
  return {k.queue(queue, "res:meta"),
          k.queue(queue, "res:free"),
          k.queue(queue, "res:seq"),
          k.wake_channel(),
          queue,
          std::move(meta_json),
          std::move(ids)};
}

script_call resource_add_call(resource_add_input in) {
  script_call c;
  c.keys = {std::move(in.res_meta), std::move(in.res_free), std::move(in.res_seq)};
  c.args = {std::move(in.wake_channel), std::move(in.queue), std::move(in.meta)};
  for (auto& id : in.ids) c.args.push_back(std::move(id));
  return c;
}

outcome<long long> resource_add_reply(const redis::result& r) {
  if (!r.ok()) return failure_of(r);
  return r.value.integer;
}

resource_release_input resource_release_for(const keys& k, const std::string& queue,
                                            std::string id) {
  return {k.queue(queue, "res:meta"),
          k.queue(queue, "res:free"),
          k.queue(queue, "res:holder"),
          k.queue(queue, "assigned"),
          k.queue(queue, "pending"),
          k.queue(queue, "pending:ids"),
          k.queue(queue, "admissions"),
          k.queue(queue, "res:seq"),
          std::move(id),
          k.wake_channel(),
          queue};
}

script_call resource_release_call(resource_release_input in) {
  script_call c;
  c.keys = {std::move(in.res_meta),   std::move(in.res_free), std::move(in.res_holder),
            std::move(in.assigned),   std::move(in.pending),  std::move(in.pending_ids),
            std::move(in.admissions), std::move(in.res_seq)};
  c.args = {std::move(in.id), std::move(in.wake_channel), std::move(in.queue)};
  return c;
}

outcome<none> resource_release_reply(const redis::result& r) {
  if (!r.ok()) return failure_of(r);
  return none{};
}

resource_remove_input resource_remove_for(const keys& k, const std::string& queue, std::string id) {
  return {k.queue(queue, "res:meta"),   k.queue(queue, "res:free"),
          k.queue(queue, "res:holder"), k.queue(queue, "assigned"),
          k.queue(queue, "pending"),    k.queue(queue, "pending:ids"),
          k.queue(queue, "admissions"), std::move(id)};
}

script_call resource_remove_call(resource_remove_input in) {
  script_call c;
  c.keys = {std::move(in.res_meta),  std::move(in.res_free), std::move(in.res_holder),
            std::move(in.assigned),  std::move(in.pending),  std::move(in.pending_ids),
            std::move(in.admissions)};
  c.args = {std::move(in.id)};
  return c;
}

outcome<none> resource_remove_reply(const redis::result& r) {
  if (!r.ok()) return failure_of(r);
  return none{};
}

}  // namespace pushonce::lua
