#include "core/lua/leader_lease.hpp"

namespace pushonce::lua {

script_call leader_lease_call(leader_lease_input in) {
  script_call c;
  c.keys = {std::move(in.lease_key), std::move(in.counter)};
  c.args = {std::move(in.mode),          std::move(in.id),
            std::move(in.pid),           std::move(in.host),
            std::to_string(in.lease_ms), std::move(in.released)};
  if (in.above) c.args.push_back(std::to_string(*in.above));
  return c;
}

}  // namespace pushonce::lua
