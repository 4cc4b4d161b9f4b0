#pragma once
// The call of lua/settings.lua (KEYS and ARGV order written once, here) and its reply: a
// queue's settings read or changed atomically (core/queue_settings).

#include <optional>
#include <string>

#include "core/keys.hpp"
#include "core/lua/script_inputs.hpp"
#include "core/queue_settings.hpp"
#include "core/redis/reply.hpp"

namespace pushonce::lua {

/// lua/settings.lua: its KEYS and ARGV, named and ordered as in the script's opening lines.
struct settings_inputs {
  static constexpr std::string_view script = "settings";
  std::string settings{}, registered{}, prequeue{}, assigned{};  // KEYS
  std::string queue{}, wake{}, what{}, at{}, shuffle{};          // ARGV
  std::vector<std::string> more_args{};                          // ARGV after the named ones
  static constexpr auto key_fields() {
    return std::array<script_input<settings_inputs>, 4>{
        {{"settings", &settings_inputs::settings},
         {"registered", &settings_inputs::registered},
         {"prequeue", &settings_inputs::prequeue},
         {"assigned", &settings_inputs::assigned}}};
  }
  static constexpr auto arg_fields() {
    return std::array<script_input<settings_inputs>, 5>{{{"queue", &settings_inputs::queue},
                                                         {"wake", &settings_inputs::wake},
                                                         {"what", &settings_inputs::what},
                                                         {"at", &settings_inputs::at},
                                                         {"shuffle", &settings_inputs::shuffle}}};
  }
};

enum class settings_op { get, set, pause, resume, close, open };

struct settings_call {
  std::string queue;
  settings_op op = settings_op::get;
  settings_change fields;             // set: field -> value
  std::optional<long long> opens_at;  // open: when (none: now)
  bool shuffle = false;               // open
};

struct settings_reply {
  queue_settings settings;
  long long default_accept_timeout_ms = 0;  // what the leaders registered the queue with
  long long prequeue_length = 0;
};

/// KEYS: settings, registered, prequeue; ARGV: queue, wake channel, op, opens_at, shuffle,
/// then the field/value pairs.
settings_inputs settings_for(const keys& k, const settings_call& c);

/// std::nullopt when the reply is not settings.lua's.
std::optional<settings_reply> parse_settings_reply(const redis::reply& r);

}  // namespace pushonce::lua
