#include "core/program.hpp"

#include <boost/json.hpp>
#include <cstdio>
#include <exception>

#include "core/errc.hpp"
#include "core/log.hpp"

namespace pushonce {

int run_program(int argc, const char* const* argv, const program_info& info,
                const boost::program_options::options_description& own,
                const std::function<int(command_line&)>& body) {
  command_line cl;
  try {
    cl = parse_command_line(argc, argv, own);
  } catch (const usage_error& e) {
    std::fprintf(stderr, "error: %s (see %s --help)\n", e.what(), std::string(info.name).c_str());
    if (info.json_errors) {
      boost::json::object o{{"error", code_text(errc::usage)}, {"message", e.what()}};
      std::printf("%s\n", boost::json::serialize(o).c_str());
    }
    return exit_usage;
  }
  if (cl.help) {
    std::fputs(help_text(info.usage, own).c_str(), stdout);
    return exit_ok;
  }
  if (cl.version) {
    std::printf("%s %s\n", std::string(info.name).c_str(), PUSHONCE_VERSION);
    return exit_ok;
  }
  log::set_level(cl.common.log_level);
  log::set_format(cl.common.log_format);
  log::set_identity(std::string(info.name.substr(info.name.rfind('-') + 1)), {});
  try {
    return body(cl);
  } catch (const usage_error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    if (info.json_errors) {
      boost::json::object o{{"error", code_text(errc::usage)}, {"message", e.what()}};
      std::printf("%s\n", boost::json::serialize(o).c_str());
    }
    return exit_usage;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return exit_failure;
  }
}

redis::connection_options redis_options(const common_options& c, std::string_view client_name) {
  redis::connection_options o;
  o.where = c.redis;
  o.cluster = c.redis_cluster;
  o.sentinel = c.redis_sentinel;
  o.client_name = std::string(client_name);
  return o;
}

}  // namespace pushonce
