#pragma once
// The calls of lua/session.lua and lua/ack.lua (KEYS and ARGV order written once, here):
// the user's meta hash (epoch, latest offset, acked offset) as a session sees it.

#include <chrono>
#include <optional>
#include <string>

#include "core/keys.hpp"
#include "core/lua/script_inputs.hpp"
#include "core/redis/reply.hpp"

namespace pushonce::lua {

/// lua/session.lua: its KEYS and ARGV, named and ordered as in the script's opening lines.
struct session_inputs {
  static constexpr std::string_view script = "session";
  static constexpr std::size_t required_args = 1;  // the rest are optional
  std::string meta{};                              // KEYS
  std::string epoch{}, idle_ttl{}, since_epoch{}, since_offset_arg{}, force_arg{};  // ARGV
  static constexpr auto key_fields() {
    return std::array<script_input<session_inputs>, 1>{{{"meta", &session_inputs::meta}}};
  }
  static constexpr auto arg_fields() {
    return std::array<script_input<session_inputs>, 5>{
        {{"epoch", &session_inputs::epoch},
         {"idle_ttl", &session_inputs::idle_ttl},
         {"since_epoch", &session_inputs::since_epoch},
         {"since_offset_arg", &session_inputs::since_offset_arg},
         {"force_arg", &session_inputs::force_arg}}};
  }
};

/// lua/ack.lua: its KEYS and ARGV, named and ordered as in the script's opening lines.
struct ack_inputs {
  static constexpr std::string_view script = "ack";
  static constexpr std::size_t required_args = 1;  // the epoch is optional
  std::string meta{};                              // KEYS
  std::string offset{}, epoch{};                   // ARGV
  static constexpr auto key_fields() {
    return std::array<script_input<ack_inputs>, 1>{{{"meta", &ack_inputs::meta}}};
  }
  static constexpr auto arg_fields() {
    return std::array<script_input<ack_inputs>, 2>{
        {{"offset", &ack_inputs::offset}, {"epoch", &ack_inputs::epoch}}};
  }
};

/// The client's resume point as session.lua checks it (lua/session.lua, ARGV[3..5]).
struct session_since {
  std::string epoch;
  long long offset = 0;
  /// A live session saw the user's offsets go back: rotate the epoch when it is `epoch`.
  bool offsets_went_back = false;
};

/// session.lua: {epoch, offset, acked, rotated}; `new_epoch` is used when the user has none
/// and when the stored epoch is rotated (since.epoch is stored and since.offset is beyond the
/// stored offset, or offsets_went_back); an idle ttl (when given) is set on a meta hash that
/// has no expiry yet.
session_inputs session_for(const keys& k, const std::string& user, const std::string& new_epoch,
                           std::optional<std::chrono::milliseconds> idle_ttl,
                           const std::optional<session_since>& since = std::nullopt);

/// ack.lua: the user has seen everything up to `offset` (of `epoch`, when given).
ack_inputs ack_for(const keys& k, const std::string& user, long long offset,
                   const std::optional<std::string>& epoch);

}  // namespace pushonce::lua
