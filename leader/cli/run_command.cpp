// Every subcommand of `pushonce-leader` but `run`: one Redis connection with the admin
// CLI's short timeouts, one command (leader/cli/admin.cpp dispatches), its exit code.
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>

#include "core/exit_on_exception.hpp"
#include "core/log.hpp"
#include "core/program.hpp"
#include "leader/cli/admin.hpp"

namespace pushonce::leader {

namespace asio = boost::asio;

int run_command(command_line& cl, bool json) {
  reporter out(json);
  if (cl.positional.empty()) return out.usage("no command given (see pushonce-leader --help)");
  auto command = cl.positional[0];
  std::vector<std::string> args(cl.positional.begin() + 1, cl.positional.end());
  std::string queue = "default";
  if (cl.vm.count("queue")) {
    auto qs = cl.vm["queue"].as<std::vector<std::string>>();
    if (qs.size() != 1) return out.usage("give --queue once");
    queue = qs[0];
  }
  // One "error:" line on stderr is the contract: the client's reconnect warnings stay
  // quiet unless debug logging was asked for.
  if (cl.common.log_level != log::level::debug) log::set_level(log::level::error);
  // Admin commands give up on an unreachable Redis within 5 s (docs/protocol.md).
  auto ro = redis_options(cl.common, "pushonce-leader:admin");
  ro.connect_timeout = std::chrono::milliseconds(1000);
  ro.command_timeout = std::chrono::milliseconds(3000);
  ro.backoff_max = std::chrono::milliseconds(250);
  ro.fail_on_login_refusal = true;  // a wrong password or database: say so at once
  asio::io_context io;
  auto conn = redis::connection::create(io.get_executor(), ro);
  conn->start();
  admin_context ctx{conn,
                    keys(cl.common.ns, cl.common.bus_shards),
                    out,
                    cl.vm,
                    std::move(args),
                    queue,
                    cl.common.retention,
                    cl.common.max_data_bytes,
                    cl.common.admission};
  int code = 1;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        code = co_await run_admin(ctx, command);
        conn->stop();
      },
      exit_on_exception("admin command"));
  io.run();
  return code;
}

}  // namespace pushonce::leader
