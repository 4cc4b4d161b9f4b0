#pragma once
// A queue's run-time settings (docs/protocol.md "Waiting room controls"): the hash
// NS:{q:Q}:settings read into a struct with its defaults, the settings object the CLI,
// `status` and the admin API print, and the checks of the values an operator gives.
// Socket-free; lua/settings.lua writes the hash, core/lua/settings builds its calls.

#include <boost/json/object.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pushonce {

struct queue_settings {
  enum class state_kind { open, closed, prequeue };
  state_kind state = state_kind::open;
  bool paused = false;
  std::optional<long long> opens_at;  // ms since the epoch, with state prequeue
  bool shuffle = false;
  long long max_waiting = 0;                  // 0: no cap
  long long abandon_after_s = 300;            // 0: never
  std::optional<long long> accept_timeout_s;  // none: the leader's --accept-timeout
  long long join_pow_bits = 0;                // 0: off
  // Capacity (docs/capacity.md)
  long long rate_per_min = 0;  // 0: no pacing
  long long burst = 0;         // passes banked while nobody waits (at least 1 is)
  bool passes = true;          // with a rate: passes when no resource is free
  long long max_active = 0;    // 0: no cap
  long long session_s = 0;     // an admission's lease; 0: none
  bool session_renewal = true;
  std::optional<long long> active;  // live admissions (read with the settings)
};

/// The hash's fields and values (HGETALL's flat list, as pairs). Unknown fields are
/// ignored; a field that does not parse keeps its default.
queue_settings parse_queue_settings(const std::vector<std::pair<std::string, std::string>>& fields);

std::string_view state_text(queue_settings::state_kind s);

/// The settings object: {"queue","state","paused","opens_at","shuffle","max_waiting",
/// "abandon_after_s","accept_timeout_s","join_pow_bits","rate_per_min","burst","passes",
/// "max_active","session_s","session_renewal"} and "active" when read; `default_accept_timeout_ms`
/// is the leaders' --accept-timeout, shown when the queue has no setting of its own.
boost::json::object render_queue_settings(std::string_view queue, const queue_settings& s,
                                          long long default_accept_timeout_ms);

/// The value the leaders registered the queue with (NS:{q:Q}:registered,
/// "accept_timeout_ms:N"): their --accept-timeout in ms; 0 when not given.
long long registered_accept_timeout_ms(std::string_view registered);
std::string registered_value(long long accept_timeout_ms);

/// An operator's change to the settings hash: field -> value.
using settings_change = std::vector<std::pair<std::string, std::string>>;

/// `settings --max-waiting N --abandon-after S --accept-timeout S --rate N ...` (each
/// optional): the fields to write, or why not (non-negative whole numbers up to 10^9).
struct settings_values {
  std::optional<long long> max_waiting, abandon_after_s, accept_timeout_s, join_pow_bits;
  std::optional<long long> rate_per_min, burst, max_active, session_s;
  std::optional<bool> passes, session_renewal;
};
std::optional<std::string> settings_problem(const settings_values& v);
settings_change settings_fields(const settings_values& v);

/// `open --at TIME`: RFC 3339 (e.g. 2026-01-02T18:00:00Z, 2026-01-02T19:00:00.5+01:00) or
/// ms since the epoch; nullopt when it is neither.
std::optional<long long> parse_open_time(std::string_view text);

}  // namespace pushonce
