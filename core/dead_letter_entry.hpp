#pragma once
// The one way an entry is added to the dead-letter stream NS:dead-letters on its own
// (docs/data-model.md): dead_letter_add.lua, for an outbox entry that is not a bus message
// and, on Redis Cluster, after dead_letter.lua marked a message (on a single Redis that
// script adds the entry itself).

#include <optional>
#include <string>

#include "core/keys.hpp"
#include "core/lua/dead_letter_add.hpp"
#include "core/redis/reply.hpp"

namespace pushonce {

/// The stream is trimmed to about this many entries (XADD MAXLEN ~); what the trim drops
/// is counted in NS:stats dead_letters_trimmed.
inline constexpr long long dead_letters_maxlen = 10000;

/// dead_letter_add.lua: XADD NS:dead-letters MAXLEN ~ dead_letters_maxlen * id user src
/// reason attempts m; the reply is the number of entries the trim dropped.
lua::dead_letter_add_inputs dead_letter_entry(const keys& k, const std::string& id,
                                              const std::string& user, const std::string& src,
                                              const std::string& reason, long long attempts,
                                              const std::string& raw);

/// The entries dead_letter_add.lua's reply says were trimmed; std::nullopt when it is not its.
std::optional<long long> parse_dead_letter_entry_reply(const redis::reply& r);

}  // namespace pushonce
