#pragma once
// The one way an entry is added to the dead-letter stream NS:dead-letters (docs/data-model.md):
// by a worker giving up on a message, and by the sweeper for an outbox entry that is not a
// bus message.

#include <string>

#include "core/keys.hpp"
#include "core/redis/reply.hpp"

namespace pushonce {

/// XADD NS:dead-letters MAXLEN ~ 10000 * id user src reason attempts m.
redis::command dead_letter_entry(const keys& k, const std::string& id, const std::string& user,
                                 const std::string& src, const std::string& reason,
                                 long long attempts, const std::string& raw);

}  // namespace pushonce
