#pragma once
// The traffic of the cluster promotion cases (tests/e2e/test_cluster_promotion.cpp): one
// browser-like WebSocket session per user that resumes on any close, and a steady publish
// load through POST /api/publish, each message retried with its idempotency key until it
// is accepted. Both record what they saw with the time, for the checks and the printed
// figures; the main thread reads them while they run (under their mutex).

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace pushonce::test::promotion {

using steady = std::chrono::steady_clock;

struct frame_seen {
  steady::time_point at;
  long long wall_ms = 0;  // the receipt by the system clock (comparable with ts)
  long long ts = 0;       // when the system accepted the message, by its clock
  long long offset = 0;
  std::string epoch, id;
};

struct welcome_seen {
  steady::time_point at;
  bool recovered = true;
  std::string epoch;
};

class user_session {
 public:
  explicit user_session(std::string user) : user_(std::move(user)) {}
  ~user_session() { stop(); }
  user_session(const user_session&) = delete;
  user_session& operator=(const user_session&) = delete;

  void start(std::uint16_t port);
  void stop();
  const std::string& user() const { return user_; }

  std::vector<frame_seen> frames() const;
  std::vector<welcome_seen> welcomes() const;
  long long stale_offsets() const;  // an offset not above the last one of the same epoch
  bool welcomed() const;
  /// A frame of message `id` was received.
  bool got(const std::string& id) const;
  /// A welcome with recovered:false at or after `t`.
  bool told_not_recovered_since(steady::time_point t) const;

 private:
  void run(std::uint16_t port);

  std::string user_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  mutable std::mutex m_;
  std::vector<frame_seen> frames_;
  std::vector<welcome_seen> welcomes_;
  long long stale_ = 0;
};

struct accepted_message {
  std::string user, id;
  steady::time_point sent;      // its first attempt
  steady::time_point accepted;  // the 200
};

class publish_load {
 public:
  /// `rate` publishes/s over `users` (round-robin) from `threads` threads, to `port`.
  publish_load(std::uint16_t port, std::string api_key, std::vector<std::string> users,
               long long rate, int threads);
  ~publish_load() { stop(); }
  publish_load(const publish_load&) = delete;
  publish_load& operator=(const publish_load&) = delete;

  void start();
  /// No new messages; the ones being retried are finished (or given up) first.
  void stop();

  std::vector<accepted_message> accepted() const;
  long long unaccepted() const { return unaccepted_; }
  long long refused_attempts() const { return refused_; }  // answers other than 200

 private:
  void run();
  std::optional<std::string> publish(std::size_t seq, const std::string& user);

  std::uint16_t port_;
  std::string api_key_;
  std::vector<std::string> users_;
  long long rate_;
  int thread_count_;
  std::atomic<bool> stop_{false};
  std::atomic<std::size_t> next_{0};
  std::atomic<long long> unaccepted_{0}, refused_{0};
  steady::time_point start_;
  std::vector<std::thread> threads_;
  mutable std::mutex m_;
  std::vector<accepted_message> accepted_;
};

/// POST /api/publish of one message to `user`; the reply's status (0: no answer).
int publish_once(std::uint16_t port, const std::string& api_key, const std::string& user);

long long percentile(std::vector<long long> v, double p);

}  // namespace pushonce::test::promotion
