#pragma once
// The checks of a custom publish that need no Redis (docs/protocol.md `publish`, POST
// /api/publish): one translation unit of their own, so the publish API's parser and the
// fuzz target link them without the Redis client.

#include <cstddef>
#include <optional>

#include "core/lua/publish.hpp"
#include "core/outcome.hpp"

namespace pushonce {

using publish_request = lua::publish_item;
using published = lua::publish_outcome;

/// bad_request unless the user is a valid name, the idempotency key (if any) is 1-200
/// characters and data is present.
std::optional<failure> validate_publish(const publish_request& r);
/// too_large when the serialised data is over `max_data_bytes`
/// (common_options::max_data_bytes).
std::optional<failure> check_publish_size(const publish_request& r, std::size_t max_data_bytes);

}  // namespace pushonce
