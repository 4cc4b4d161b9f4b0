#pragma once
// The call of lua/expire.lua (KEYS and ARGV order written once, here) and its reply: the
// assignments whose accept deadline has passed end, their resources are free again.

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "core/keys.hpp"
#include "core/lua/assign.hpp"
#include "core/lua/script_inputs.hpp"
#include "core/redis/reply.hpp"

namespace pushonce::lua {

/// lua/expire.lua: its KEYS and ARGV, named and ordered as in the script's opening lines.
struct expire_inputs {
  static constexpr std::string_view script = "expire";
  std::string pending{}, pending_ids{}, assigned{}, res_free{}, res_seq{}, res_holder{}, seq{},
      outbox{}, fence{}, admissions{};  // KEYS
  std::string queue{}, source_arg{}, token_arg{}, retention_arg{}, bus_channel{}, wake_channel{},
      max_arg{};  // ARGV
  static constexpr auto key_fields() {
    return std::array<script_input<expire_inputs>, 10>{
        {{"pending", &expire_inputs::pending},
         {"pending_ids", &expire_inputs::pending_ids},
         {"assigned", &expire_inputs::assigned},
         {"res_free", &expire_inputs::res_free},
         {"res_seq", &expire_inputs::res_seq},
         {"res_holder", &expire_inputs::res_holder},
         {"seq", &expire_inputs::seq},
         {"outbox", &expire_inputs::outbox},
         {"fence", &expire_inputs::fence},
         {"admissions", &expire_inputs::admissions}}};
  }
  static constexpr auto arg_fields() {
    return std::array<script_input<expire_inputs>, 7>{
        {{"queue", &expire_inputs::queue},
         {"source_arg", &expire_inputs::source_arg},
         {"token_arg", &expire_inputs::token_arg},
         {"retention_arg", &expire_inputs::retention_arg},
         {"bus_channel", &expire_inputs::bus_channel},
         {"wake_channel", &expire_inputs::wake_channel},
         {"max_arg", &expire_inputs::max_arg}}};
  }
};

/// expire.lua on `queue`: up to `max` assignments past their deadline, as leader `source`
/// with `fencing_token` (0: none); the expiry messages' outbox entry is trimmed by
/// `outbox_retention`.
expire_inputs expire_for(const keys& k, const std::string& queue, long long source,
                         long long fencing_token, std::chrono::milliseconds outbox_retention,
                         long long max);

/// expire.lua's reply, four items per expiry: the `expired` message id (assignment::id),
/// the user, the resource (the assignment id, fourth, is not kept).
std::vector<assignment> expire_reply_of(const redis::reply& r);

}  // namespace pushonce::lua
