#include "core/lua/source.hpp"

#include "core/redis/failure_of.hpp"

namespace pushonce::lua {

source_inputs source_for_queue(const keys& k, const std::string& queue, long long held) {
  return source_inputs{.sources = k.plain("sources"),
                       .name = "q:" + queue,
                       .held_arg = held > 0 ? std::to_string(held) : ""};
}

outcome<long long> source_reply_of(const redis::result& r) {
  if (!r.ok()) return failure_of(r);
  return r.value.integer;
}

}  // namespace pushonce::lua
