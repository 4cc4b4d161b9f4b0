#include "leader/queue_list_check.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>

#include "core/exit_on_exception.hpp"
#include "core/program.hpp"
#include "leader/queue_list.hpp"

namespace pushonce::leader {

namespace asio = boost::asio;

// Every third of a lease: does the namespace have a queue this leader would not serve?
asio::awaitable<void> queue_list_check::run() {
  if (!on_conflict_) co_return;
  redis::command cmd{"SMEMBERS", keys_.plain("queues")};
  auto r = co_await conn_->exec(std::move(cmd));
  if (!r.ok() || r.value.elements.empty()) co_return;  // Redis away: the next round checks
  std::vector<std::string> registered;
  for (auto& e : r.value.elements) registered.push_back(e.str);
  auto missing = queues_missing_from(mine_, std::move(registered));
  if (missing.empty()) co_return;
  auto fn = std::move(on_conflict_);
  on_conflict_ = nullptr;
  fn(queue_conflict_message(missing, mine_, keys_.plain("queues")));
}

// A --queue list that lacks a queue of the namespace is refused before the daemon starts
// (the daemon checks again every third of a lease). An unreachable Redis is not a
// conflict: the daemon's own check runs once it answers.
std::optional<std::string> queue_conflict_at_start(const common_options& common,
                                                   const std::vector<std::string>& mine) {
  auto ro = redis_options(common, "pushonce-leader:check");
  ro.connect_timeout = std::chrono::milliseconds(1000);
  ro.command_timeout = std::chrono::milliseconds(2000);
  asio::io_context io;
  auto conn = redis::connection::create(io.get_executor(), ro);
  conn->start();
  keys k(common.ns, common.bus_shards);
  std::optional<std::string> out;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        redis::command cmd{"SMEMBERS", k.plain("queues")};
        auto r = co_await conn->exec(std::move(cmd));
        if (r.ok()) {
          std::vector<std::string> registered;
          for (auto& e : r.value.elements) registered.push_back(e.str);
          auto missing = queues_missing_from(mine, std::move(registered));
          if (!missing.empty()) out = queue_conflict_message(missing, mine, k.plain("queues"));
        }
        conn->stop();
      },
      exit_on_exception("queue list check"));
  io.run();
  return out;
}

}  // namespace pushonce::leader
