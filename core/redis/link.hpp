#pragma once
// The reconnecting I/O shell that redis::connection and redis::subscriber share (the
// Boost.Redis run() shape): one strand, one socket with hiredis as the RESP codec, one run
// loop that connects with a deadline and backs off with full jitter between attempts, one
// reader and one writer per connection, and a ticker that runs from start() to stop().
// With a Sentinel in the options, every (re)connect first asks the sentinels where the
// master is (redis::find_master) and connects there; the connection must answer ROLE as a
// master. A lost connection, a failed ROLE check or READONLY (the owner drops the link) thus
// all lead to asking the sentinels again.
// It decides nothing: a `client` (the bookkeeping of requests or of subscriptions) is told
// what happened and says what to write.

#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "core/backoff.hpp"
#include "core/redis/endpoint.hpp"
#include "core/redis/reply.hpp"
#include "core/redis/resp_stream.hpp"
#include "core/redis/sentinel_choice.hpp"

namespace pushonce::redis {

class link {
 public:
  using clock_type = std::chrono::steady_clock;
  using strand_type = boost::asio::strand<boost::asio::any_io_executor>;

  /// What the link tells its owner. Every call runs on the strand.
  class client {
   public:
    virtual ~client() = default;
    /// A connection is up (logged in); the writer starts after this returns.
    virtual void on_up() = 0;
    /// One reply; false drops the connection (the reply did not fit the state).
    virtual bool on_reply(reply r) = 0;
    /// Appends what is ready to be written to `out` (at least `max_bytes` when there is more).
    virtual void fill(std::string& out, std::size_t max_bytes) = 0;
    /// The connection is gone (it will be retried unless stopped).
    virtual void on_down() = 0;
    /// Every tick_period from start() to stop(); true drops the connection.
    virtual bool on_tick(clock_type::time_point now) = 0;
    /// stop() was called: fail whatever is pending. Called once.
    virtual void on_stopped() = 0;
    /// A connect attempt failed; `why` names the address and the cause (Redis's own reply
    /// to a refused login). The link retries after its backoff unless stopped.
    virtual void on_connect_failed(std::error_code /*ec*/, const std::string& /*why*/) {}
  };

  /// The ticker runs every tenth of the command timeout (10 to 100 ms).
  link(boost::asio::any_io_executor ex, connection_options opts, std::string role, client& owner);
  link(const link&) = delete;
  link& operator=(const link&) = delete;

  /// Starts the run loop (once); `keep_alive` is held until it ends. On the strand.
  void start(std::shared_ptr<void> keep_alive);
  /// Stops: client::on_stopped, cancels the backoff, closes the socket. On the strand.
  void stop();
  /// The function notify_connected() runs. On the strand.
  void set_on_connect(std::function<void()> fn) { on_connect_ = std::move(fn); }
  /// Runs the on_connect function (the client calls it once the link is usable).
  void notify_connected() {
    if (on_connect_) on_connect_();
  }
  /// More output is ready. On the strand.
  void wake();
  /// Closes the current connection; the run loop reconnects. On the strand.
  void drop();

  const strand_type& strand() const { return strand_; }
  const connection_options& options() const { return opts_; }
  bool connected() const { return connected_; }
  bool stopped() const { return stopped_; }

 private:
  boost::asio::awaitable<void> run(std::shared_ptr<void> keep_alive);
  boost::asio::awaitable<void> reader();
  boost::asio::awaitable<void> writer();
  boost::asio::awaitable<void> ticker(std::shared_ptr<void> keep_alive);
  boost::asio::awaitable<void> pause_before_retry();
  boost::asio::awaitable<bool> locate_master();
  void next_seed();

  strand_type strand_;
  resp_stream stream_;
  connection_options opts_;
  std::string role_;  // "redis" or "redis subscriber", for log lines
  client& owner_;
  std::chrono::milliseconds tick_period_;
  boost::asio::steady_timer wake_, tick_, pause_;
  backoff retry_;
  std::string out_;
  std::function<void()> on_connect_;
  std::atomic<bool> connected_{false};
  bool started_ = false, stopped_ = false, was_down_ = false;
  std::size_t seed_ = 0;  // index in opts_.cluster of `where`
  sentinel_choice sentinel_;
};

}  // namespace pushonce::redis
