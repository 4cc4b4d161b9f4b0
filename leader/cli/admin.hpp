#pragma once
// The admin commands of `pushonce-leader` (everything but `run`).

#include <boost/asio/awaitable.hpp>
#include <boost/program_options/variables_map.hpp>
#include <memory>
#include <string>
#include <vector>

#include "core/admission_token.hpp"
#include "core/config.hpp"
#include "core/keys.hpp"
#include "core/outcome.hpp"
#include "core/redis/connection.hpp"
#include "core/retention.hpp"
#include "leader/cli/reporter.hpp"

namespace pushonce {
class queue_api;
}  // namespace pushonce

namespace pushonce::leader {

struct admin_context {
  std::shared_ptr<redis::connection> conn;
  keys k;  // with --bus-shards: the shards `publish` spreads over
  reporter out;
  const boost::program_options::variables_map& vm;
  std::vector<std::string> args;  // positional words after the command name
  std::string queue;              // --queue (default "default")
  pushonce::retention retention;  // --dedup-window-ms, --outbox-retention-ms
  std::size_t max_data_bytes;     // --max-data-bytes: `publish` refuses larger data
  admission::options admission;   // --admission-*: `admission verify` checks with its keys
};

/// Runs an admin command line (leader/main.cpp dispatches): connects, runs the command named
/// by the first positional word, returns the exit code.
int run_command(command_line& cl, bool json);

/// Runs the command named args[0] (with its words); returns the exit code.
boost::asio::awaitable<int> run_admin(admin_context& ctx, std::string command);

/// The exit code of a failure: 2 for bad_request and usage, else 1.
int exit_for(const failure& f);
/// Prints a failure with exit_for's code; returns it.
int report_failure(admin_context& ctx, const failure& f);
/// Exactly `n` words after the command; else prints the usage line, sets `code`, false.
bool want_args(admin_context& ctx, std::size_t n, const char* usage, int& code);

/// `status`, `dead-letters`, `trace`: each in its own file.
boost::asio::awaitable<int> run_status(admin_context& ctx);
boost::asio::awaitable<int> run_dead_letters(admin_context& ctx);
boost::asio::awaitable<int> run_trace(admin_context& ctx);
/// `settings`, `pause`, `resume`, `close`, `open` (leader/cli/queue_controls.cpp).
boost::asio::awaitable<int> run_queue_controls(admin_context& ctx, std::string command);
/// `report` (report_command.cpp).
boost::asio::awaitable<int> run_report(admin_context& ctx);
/// `admission verify TOKEN` (admission_command.cpp).
boost::asio::awaitable<int> run_admission(admin_context& ctx);
/// `resource add|release|remove|list` (resource_command.cpp).
boost::asio::awaitable<int> run_resource(admin_context& ctx, queue_api& q);
/// `token`, `publish`, `disconnect` (user_commands.cpp).
boost::asio::awaitable<int> run_token(admin_context& ctx);
boost::asio::awaitable<int> run_publish(admin_context& ctx);
boost::asio::awaitable<int> run_disconnect(admin_context& ctx);

}  // namespace pushonce::leader
