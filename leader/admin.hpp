#pragma once
// The admin commands of `pushonce-leader` (everything but `run`).

#include <boost/asio/awaitable.hpp>
#include <boost/program_options/variables_map.hpp>
#include <memory>
#include <string>
#include <vector>

#include "core/admission_token.hpp"
#include "core/keys.hpp"
#include "core/redis/connection.hpp"
#include "core/retention.hpp"
#include "leader/reporter.hpp"

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

/// Runs the command named args[0] (with its words); returns the exit code.
boost::asio::awaitable<int> run_admin(admin_context& ctx, std::string command);

/// `status`, `dead-letters`, `trace`: each in its own file.
boost::asio::awaitable<int> run_status(admin_context& ctx);
boost::asio::awaitable<int> run_dead_letters(admin_context& ctx);
boost::asio::awaitable<int> run_trace(admin_context& ctx);
/// `settings`, `pause`, `resume`, `close`, `open` (leader/queue_controls.cpp).
boost::asio::awaitable<int> run_queue_controls(admin_context& ctx, std::string command);
/// `admission verify TOKEN` (admission_command.cpp).
boost::asio::awaitable<int> run_admission(admin_context& ctx);

}  // namespace pushonce::leader
