#pragma once
// The request bookkeeping of one pipelined Redis connection, with no socket (the sans-io
// half of redis::connection, in the shape of Boost.Redis' detail/multiplexer):
//
//  - push(): a command joins `waiting` with a deadline (now + command timeout), or fails at
//    once with error::queue_full (more than max_queued commands waiting or in flight) or
//    with the error the queue was closed with.
//  - write_into(): every waiting command is RESP-encoded straight into the caller's output
//    buffer (one encoding, no intermediate string) and moves to `inflight`, in order.
//  - on_reply(): replies arrive in the order commands were written; each one completes the
//    oldest in-flight command. A command that timed out in flight keeps its slot (with no
//    handler) so the replies after it still match.
//  - expire(): a waiting command past its deadline is failed and never written; an in-flight
//    one is failed with error::timeout and the call reports that the server is stuck (the
//    caller drops the connection).
//  - on_disconnect(): commands written but unanswered are failed with error::disconnected
//    and never resent: Redis may have run them, and a second run (a PUBLISH, an INCR, a
//    claim) is not harmless. Waiting commands stay for the next connection.
//  - close(ec): fails everything with `ec` and every later push too (stop()).
//
// Completions are collected while the state is updated and delivered afterwards through
// `deliver`, so a completion that pushes again (a coroutine resumed inline) sees a
// consistent queue.

#include <boost/asio/any_completion_handler.hpp>
#include <chrono>
#include <cstddef>
#include <deque>
#include <functional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "core/redis/reply.hpp"

namespace pushonce::redis {

class request_queue {
 public:
  using clock_type = std::chrono::steady_clock;
  using handler_type = boost::asio::any_completion_handler<void(std::error_code, reply)>;
  /// Runs one completion; the connection dispatches it to the handler's executor.
  using deliver_fn = std::function<void(handler_type&&, std::error_code, reply&&)>;

  request_queue(std::size_t max_queued, std::chrono::milliseconds timeout, deliver_fn deliver);
  request_queue(const request_queue&) = delete;
  request_queue& operator=(const request_queue&) = delete;

  /// Queues a command; false when it was failed at once (queue full, closed).
  bool push(command cmd, handler_type handler, clock_type::time_point now);
  /// Encodes waiting commands into `out` (appended) until it holds at least `max_bytes`;
  /// the number of commands written.
  std::size_t write_into(std::string& out, std::size_t max_bytes);
  /// Completes the oldest in-flight command; false when no command was in flight (a reply
  /// nobody asked for: the connection is out of step and must be dropped).
  bool on_reply(reply r);
  /// Fails commands past their deadline; true when one of them was in flight.
  bool expire(clock_type::time_point now);
  /// Fails every in-flight command with error::disconnected.
  void on_disconnect();
  /// Fails everything with `ec`, and every later push.
  void close(std::error_code ec);
  /// Why the connection is not up (e.g. "cannot connect to 10.0.0.5:6379: Connection
  /// refused"), or empty: given, as the reply's text, to commands failed before they were
  /// written (timed out waiting, or closed), so that the caller can say what happened.
  void set_note(std::string note) { note_ = std::move(note); }

  bool has_waiting() const { return !waiting_.empty(); }
  std::size_t waiting() const { return waiting_.size(); }
  std::size_t inflight() const { return inflight_.size(); }
  /// Commands not completed yet (waiting, or in flight with a handler).
  std::size_t active() const { return active_; }
  bool closed() const { return bool(closed_); }

 private:
  struct entry {
    entry(command c, handler_type h, clock_type::time_point d)
        : cmd(std::move(c)), handler(std::move(h)), deadline(d) {}
    entry(entry&&) = default;
    entry& operator=(entry&&) = delete;  // any_completion_handler's move-assign recurses
    command cmd;
    handler_type handler;
    clock_type::time_point deadline;
    bool done = false;
  };
  struct ready {
    handler_type handler;
    std::error_code ec;
    reply value;
  };

  void finish(entry& e, std::error_code ec, reply r);
  reply noted() const;  // an empty reply whose text is note_
  void flush();

  std::size_t max_queued_;
  std::chrono::milliseconds timeout_;
  deliver_fn deliver_;
  std::deque<entry> waiting_, inflight_;
  std::vector<ready> ready_;
  std::size_t active_ = 0;
  std::error_code closed_;
  std::string note_;
};

}  // namespace pushonce::redis
