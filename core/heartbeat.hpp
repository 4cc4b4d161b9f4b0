#pragma once
// Liveness of a process (DESIGN.md "Liveness"): every period, HSET NS:<kind>:<id> with
// id/pid/host/last_seen (+ extra fields) and a TTL of three periods, and ZADD NS:<kind>s
// id → now. `status` lists the members seen within the TTL.

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "core/keys.hpp"
#include "core/redis/connection.hpp"

namespace pushonce {

class heartbeat {
 public:
  using extra_fn = std::function<std::map<std::string, std::string>()>;

  /// kind: "worker" | "gateway" (keys NS:workers, NS:worker:<id>).
  heartbeat(std::shared_ptr<redis::connection> conn, keys k, std::string kind, std::string id,
            std::chrono::milliseconds period = std::chrono::seconds(1), extra_fn extra = {});

  /// Beats until the coroutine is cancelled or stop() is called.
  boost::asio::awaitable<void> run();
  void stop() { stopped_ = true; }
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
  bool stopped_ = false;
};

/// A unique process id: "<host>-<pid>-<random hex>".
std::string make_process_id(std::string_view prefix);

}  // namespace pushonce
