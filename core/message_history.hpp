#pragma once
// What `pushonce-leader trace ID` shows, decided without Redis: the history of a message
// from its outbox line (published), its claim record (delivered / leased / released /
// dead-lettered) and, when workers run with --trace, the per-event detail they recorded.
// Nothing is written per message for it.

#include <boost/json/array.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/lua/claim.hpp"

namespace pushonce {

/// The outbox line of message `id` in an outbox entry's text (one message per line).
std::optional<std::string> line_of(std::string_view entry, std::string_view id);
/// The id of the first / last message of an outbox entry (0 when unreadable).
unsigned long long first_id(std::string_view entry);
unsigned long long last_id(std::string_view entry);

/// The events, oldest first: "published" (from the line), then what the claim record says,
/// then any recorded detail events (JSON texts) not already covered.
boost::json::array history(const std::string& line, const std::optional<lua::claim_record>& claim,
                           const std::vector<std::string>& detail, long long now_ms,
                           long long dedup_window_ms);

}  // namespace pushonce
