#pragma once
// Runs the embedded Lua scripts by SHA (EVALSHA), loading a script and retrying once when
// Redis answers NOSCRIPT (after a restart or SCRIPT FLUSH). The programs call these only
// through lua::run_script / lua::run_scripts (core/lua/script_inputs.hpp), whose inputs
// struct names the script; tests also send scripts arguments no struct would (eval).

#include <boost/asio/awaitable.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/redis/connection.hpp"

namespace pushonce::redis {

struct script {
  std::string name;
  std::string text;
  std::string sha1;  // hex, computed locally
};

/// The embedded script named `name` (file stem); throws std::out_of_range if unknown.
const script& get_script(std::string_view name);

/// EVALSHA; on NOSCRIPT: SCRIPT LOAD and EVALSHA once more.
boost::asio::awaitable<result> eval(connection& conn, const script& s,
                                    std::vector<std::string> keys, std::vector<std::string> args);

/// Several EVALSHA commands of one script (built with evalsha_command) as one pipeline;
/// the ones answered NOSCRIPT are retried, in order, after one SCRIPT LOAD.
boost::asio::awaitable<std::vector<result>> eval_all(connection& conn, const script& s,
                                                     std::vector<command> evalshas);

/// The EVALSHA command itself, for callers that pipeline (eval_all).
command evalsha_command(const script& s, const std::vector<std::string>& keys,
                        const std::vector<std::string>& args);

}  // namespace pushonce::redis
