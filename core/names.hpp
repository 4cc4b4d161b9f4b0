#pragma once
// Validation of the names that go into Redis keys (users, queues, resource ids, process
// ids): 1-128 characters of [A-Za-z0-9._@-], so no name can break a {hash tag} or a key.

#include <string_view>

namespace pushonce {

bool valid_name(std::string_view name);

/// Compares two non-negative decimal integer strings as numbers ("9" < "10").
/// Leading zeros are ignored. Returns <0, 0, >0.
int compare_ids(std::string_view a, std::string_view b);

}  // namespace pushonce
