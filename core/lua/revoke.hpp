#pragma once
// The call of lua/revoke.lua (KEYS and ARGV order written once, here) and its reply, and the
// read of the revocations a gateway loads at start (docs/data-model.md, "Revocations").
// Revocations are one slot, {revoked}: rare, and read whole by every gateway.

#include <chrono>
#include <optional>
#include <string>

#include "core/keys.hpp"
#include "core/lua/script_inputs.hpp"
#include "core/redis/reply.hpp"

namespace pushonce::lua {

/// NS:{revoked}: hash, field user, value "AT_MS:UNTIL_MS".
std::string revoked_key(const keys& k);
/// NS:control: classic Pub/Sub, every gateway subscribes (also on Redis Cluster).
std::string control_channel(const keys& k);

/// lua/revoke.lua: its KEYS and ARGV, named and ordered as in the script's opening lines.
struct revoke_inputs {
  static constexpr std::string_view script = "revoke";
  std::string revoked{}, expiries{};                      // KEYS
  std::string channel{}, user{}, flag{}, lifetime_arg{};  // ARGV
  static constexpr auto key_fields() {
    return std::array<script_input<revoke_inputs>, 2>{
        {{"revoked", &revoke_inputs::revoked}, {"expiries", &revoke_inputs::expiries}}};
  }
  static constexpr auto arg_fields() {
    return std::array<script_input<revoke_inputs>, 4>{
        {{"channel", &revoke_inputs::channel},
         {"user", &revoke_inputs::user},
         {"flag", &revoke_inputs::flag},
         {"lifetime_arg", &revoke_inputs::lifetime_arg}}};
  }
};

/// revoke.lua: every gateway closes `user`'s sessions; with `revoke`, tokens of the user
/// issued at or before now are refused for `lifetime`.
revoke_inputs revoke_for(const keys& k, const std::string& user, bool revoke,
                         std::chrono::milliseconds lifetime);
struct revoke_reply {
  long long at_ms = 0;     // Redis's clock
  long long until_ms = 0;  // 0: no revocation
  long long receivers = 0;
};
std::optional<revoke_reply> parse_revoke_reply(const redis::reply& r);

/// HGETALL NS:{revoked}: what a gateway loads at start and after its subscriber reconnects.
redis::command revocations_snapshot_command(const keys& k);

}  // namespace pushonce::lua
