#include "core/lua/source.hpp"

#include "core/redis/failure_of.hpp"

namespace pushonce::lua {

source_input source_for_queue(const keys& k, const std::string& queue) {
  return {k.plain("sources"), "q:" + queue};
}

script_call source_call(source_input in) {
  script_call c;
  c.keys = {std::move(in.sources)};
  c.args = {std::move(in.name)};
  return c;
}

outcome<long long> source_reply_of(const redis::result& r) {
  if (!r.ok()) return failure_of(r);
  return r.value.integer;
}

}  // namespace pushonce::lua
