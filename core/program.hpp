#pragma once
// The part of every main(): parse the command line, answer --help/--version, turn usage
// errors into "error: ..." + exit 2, set up logging, then hand over to the program.

#include <functional>
#include <string_view>

#include "core/config.hpp"

namespace pushonce {

struct program_info {
  std::string_view name;     // "pushonce-worker"
  std::string_view usage;    // first lines of --help
  bool json_errors = false;  // usage errors also as {"error":"usage","message"} on stdout
};

/// Calls body(cl) and returns its exit code; exceptions from body become exit 1.
int run_program(int argc, const char* const* argv, const program_info& info,
                const boost::program_options::options_description& own,
                const std::function<int(command_line&)>& body);

/// Redis connection options for a program (client name "<program>:<id>").
redis::connection_options redis_options(const common_options& c, std::string_view client_name);

}  // namespace pushonce
