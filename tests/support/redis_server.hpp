#pragma once
// A real redis-server for integration and e2e tests: started on a free loopback port in a
// fresh temporary directory, ready (answers PING) when the constructor returns, stopped
// and its directory removed on destruction.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace pushonce::test {

class process;
class temp_dir;

struct redis_server_options {
  bool appendonly = false;              // --appendonly yes (AOF, fsync always) when true
  bool cluster_bus = false;             // the port + 10000 (Redis Cluster's bus) must be free too
  std::vector<std::string> extra_args;  // more redis-server arguments ("--maxmemory", "10mb")
  std::chrono::milliseconds ready_timeout{5000};
};

class redis_server {
 public:
  explicit redis_server(redis_server_options options = {});
  ~redis_server();
  redis_server(const redis_server&) = delete;
  redis_server& operator=(const redis_server&) = delete;

  std::uint16_t port() const { return port_; }
  /// "redis://127.0.0.1:PORT"
  std::string url() const;
  /// The server's working directory (AOF/RDB files, and its log "redis.*.out").
  const std::string& dir() const;
  bool running() const;

  /// SIGTERM and wait for the exit (SIGKILL after 10 s). A no-op when not running.
  void stop();
  /// SIGKILL: a crash, nothing flushed beyond what the persistence settings guarantee.
  void kill();
  /// SIGSTOP / SIGCONT: a server that accepts connections but does not answer.
  void pause();
  void resume();
  /// Stops if running, then starts again on the same port and directory; waits for PING.
  void restart();

  /// Everything the server logged so far (its stdout).
  std::string log() const;

 private:
  void start();
  bool wait_ready(std::chrono::milliseconds timeout);

  redis_server_options options_;
  std::unique_ptr<temp_dir> dir_;
  std::unique_ptr<process> process_;
  std::uint16_t port_ = 0;
};

/// A loopback TCP port below the ephemeral range that was free a moment ago.
std::uint16_t free_port();
/// A free port P whose P + 10000 (a cluster node's bus port) is free and valid too.
std::uint16_t free_cluster_port();

}  // namespace pushonce::test
