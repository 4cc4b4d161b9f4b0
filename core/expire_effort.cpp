#include "core/expire_effort.hpp"

#include <fmt/format.h>

namespace pushonce {

std::optional<std::string> expire_effort_warning(const redis::reply& r) {
  // A flat array: name, value.
  if (r.elements.size() != 2 || r.elements[0].str != "active-expire-effort" ||
      !r.elements[1].is_string())
    return std::nullopt;
  auto effort = r.elements[1].as_int();
  if (!effort || *effort >= recommended_expire_effort) return std::nullopt;
  return fmt::format(
      "redis active-expire-effort is {}: under sustained load claim records expire faster "
      "than Redis reclaims them and its memory overshoots; set active-expire-effort {} "
      "(docs/operations.md \"Redis memory\")",
      *effort, recommended_expire_effort);
}

}  // namespace pushonce
