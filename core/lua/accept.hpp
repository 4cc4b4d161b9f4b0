#pragma once
// The call of lua/accept.lua (KEYS and ARGV order written once, here) and its reply: the
// user takes the resource of its assignment before the deadline.

#include <array>
#include <optional>
#include <string>
#include <string_view>

#include "core/keys.hpp"
#include "core/lua/script_inputs.hpp"
#include "core/outcome.hpp"
#include "core/redis/connection.hpp"

namespace pushonce::lua {

/// lua/accept.lua: its KEYS and ARGV, named and ordered as in the script's opening lines.
struct accept_inputs {
  static constexpr std::string_view script = "accept";
  std::string pending{}, pending_ids{}, assigned{}, admissions{}, leases{}, settings{},
      admissions_t{};          // KEYS
  std::string user{}, want{};  // ARGV (want: assignment id, "" = whatever the user holds)
  static constexpr auto key_fields() {
    using in = accept_inputs;
    return std::array<script_input<in>, 7>{{{"pending", &in::pending},
                                            {"pending_ids", &in::pending_ids},
                                            {"assigned", &in::assigned},
                                            {"admissions", &in::admissions},
                                            {"leases", &in::leases},
                                            {"settings", &in::settings},
                                            {"admissions_t", &in::admissions_t}}};
  }
  static constexpr auto arg_fields() {
    return std::array<script_input<accept_inputs>, 2>{
        {{"user", &accept_inputs::user}, {"want", &accept_inputs::want}}};
  }
};
accept_inputs accept_for(const keys& k, const std::string& queue, std::string user,
                         std::string want);
struct accept_reply {
  std::string id;
  std::string resource;
  std::optional<long long> expires_at;  // the lease's end after the accept (ms), if any
};
outcome<accept_reply> accept_reply_of(const redis::result& r);

}  // namespace pushonce::lua
