#include "core/layout.hpp"

#include <fmt/format.h>

namespace pushonce {
namespace {
std::string layout_value(const keys& k) {
  return "bus-shards=" + std::to_string(k.shards());
}
}  // namespace

redis::command layout_command(const keys& k) {
  return {"SET", k.plain("layout"), layout_value(k), "NX", "GET", "PX", "10000"};
}

redis::command layout_renew_command(const keys& k) {
  return {"PEXPIRE", k.plain("layout"), "10000"};
}

std::optional<std::string> layout_conflict(const keys& k,
                                           std::optional<std::string_view> recorded) {
  if (!recorded || *recorded == layout_value(k)) return std::nullopt;
  return fmt::format(
      "namespace {} is laid out with {} ({}), this process runs with --bus-shards {}: a user's "
      "keys would be looked for in the wrong shard; give every process the same --bus-shards",
      k.ns(), *recorded, k.plain("layout"), k.shards());
}

}  // namespace pushonce
