#include "core/publish_checks.hpp"

#include <string>

#include "core/names.hpp"

namespace pushonce {

std::optional<failure> validate_publish(const publish_request& r) {
  if (!valid_name(r.user))
    return failure{errc::bad_request,
                   "invalid user '" + r.user + "': use 1-128 characters of A-Z a-z 0-9 . _ @ -"};
  if (r.idempotency_key && (r.idempotency_key->empty() || r.idempotency_key->size() > 200))
    return failure{errc::bad_request, "an idempotency key is a string of 1-200 characters"};
  if (r.data_json.empty()) return failure{errc::bad_request, "data is missing"};
  return std::nullopt;
}

std::optional<failure> check_publish_size(const publish_request& r, std::size_t max_data_bytes) {
  if (r.data_json.size() <= max_data_bytes) return std::nullopt;
  return failure{errc::too_large, "data is " + std::to_string(r.data_json.size()) +
                                      " bytes serialised, over the limit of " +
                                      std::to_string(max_data_bytes) + " (--max-data-bytes)"};
}

}  // namespace pushonce
