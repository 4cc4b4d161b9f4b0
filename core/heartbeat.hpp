#pragma once
// Liveness of a process (docs/operations.md, status): every period, HSET NS:<kind>:<id> with
// id/pid/host/last_seen (+ extra fields) and a TTL of three periods, and ZADD NS:<kind>s
// id → now. `status` lists the members seen within the TTL. Each beat also records the
// namespace's layout (NS:layout) and checks this process's against it: on a conflict the
// heartbeat stops and tells its owner, the program, which decides what follows.

#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "core/keys.hpp"
#include "core/redis/connection.hpp"

namespace pushonce {

class heartbeat {
 public:
  using extra_fn = std::function<std::map<std::string, std::string>()>;
  /// The namespace's layout is not this process's: `why` says how (layout_conflict).
  using conflict_fn = std::function<void(const std::string& why)>;

  /// kind: "worker" | "gateway" (keys NS:workers, NS:worker:<id>).
  heartbeat(std::shared_ptr<redis::connection> conn, keys k, std::string kind, std::string id,
            std::chrono::milliseconds period = std::chrono::seconds(1), extra_fn extra = {});

  /// Beats every period until stop(): stop() cancels the wait between beats, so run()
  /// returns promptly (at once, or when a beat in progress completes). run() and stop()
  /// must be called on one strand (the executor run() was spawned on, if single-threaded).
  boost::asio::awaitable<void> run();
  void stop();
  /// Runs once on a layout conflict, after which the heartbeat has stopped; without it the
  /// conflict is logged as an error. Set it before run().
  void on_conflict(conflict_fn fn) { on_conflict_ = std::move(fn); }
  /// One beat (also used at start-up so the process is listed at once).
  boost::asio::awaitable<void> beat();
  /// Removes this process from the listing (clean shutdown).
  boost::asio::awaitable<void> remove();

  static std::string hostname();

 private:
  std::shared_ptr<redis::connection> conn_;
  keys keys_;
  std::string kind_, id_;
  std::chrono::milliseconds period_;
  extra_fn extra_;
  conflict_fn on_conflict_;
  bool stopped_ = false;
  std::optional<boost::asio::steady_timer> timer_;  // while run() waits
};

/// A unique process id: "<host>-<pid>-<random hex>".
std::string make_process_id(std::string_view prefix);

}  // namespace pushonce
