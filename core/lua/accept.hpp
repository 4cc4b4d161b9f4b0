#pragma once
// The call of lua/accept.lua (KEYS and ARGV order written once, here) and its reply: the
// user takes the resource of its assignment before the deadline.

#include <array>
#include <string>
#include <string_view>

#include "core/keys.hpp"
#include "core/lua/script_inputs.hpp"
#include "core/outcome.hpp"
#include "core/redis/connection.hpp"

namespace pushonce::lua {

struct accept_input {
  // KEYS
  std::string pending;
  std::string pending_ids;
  std::string assigned;
  std::string admissions;
  // ARGV
  std::string user;
  std::string want;  // assignment id ("" = whatever the user holds)
};
inline constexpr std::array<std::string_view, 4> accept_key_names{"pending", "pending_ids",
                                                                  "assigned", "admissions"};
inline constexpr std::array<std::string_view, 2> accept_arg_names{"user", "want"};
accept_input accept_for(const keys& k, const std::string& queue, std::string user,
                        std::string want);
script_call accept_call(accept_input in);
struct accept_reply {
  std::string id;
  std::string resource;
};
outcome<accept_reply> accept_reply_of(const redis::result& r);

}  // namespace pushonce::lua
