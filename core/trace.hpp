#pragma once
// The history of a message (`pushonce-leader trace ID`): JSON events appended to
// NS:trace:<id> (a list kept for the dedup window) by whoever acts on the message.
// Writing is fire-and-forget: tracing never slows or fails the pipeline.

#include <boost/json/object.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "core/defaults.hpp"
#include "core/keys.hpp"
#include "core/redis/connection.hpp"

namespace pushonce {

/// What `pushonce-leader trace ARG [--user USER]` looks up, decided without Redis: with
/// --user, ARG is that user's idempotency key (the `--id KEY` of `publish`, kept for the
/// dedup window at NS:{bus:N}:idem:USER:KEY, naming the message id); without, a message id
/// (decimal digits). Otherwise `error` says what to type.
struct trace_lookup {
  std::string id;                  // a message id to trace, or
  std::optional<std::string> key;  // an idempotency key of `user`, to turn into one
  std::string user;
  std::string error;  // neither: why not
};
trace_lookup trace_lookup_of(const std::string& arg, const std::optional<std::string>& user);

class tracer {
 public:
  tracer(std::shared_ptr<redis::connection> conn, keys k,
         std::chrono::milliseconds keep = defaults::dedup_window, bool enabled = true)
      : conn_(std::move(conn)), keys_(std::move(k)), keep_(keep), enabled_(enabled) {}

  /// Appends `event` (an "event" field and details; "ts" is added) to the id's history.
  void record(const std::string& id, boost::json::object event) const;

  std::string key(const std::string& id) const { return keys_.plain("trace:" + id); }

 private:
  std::shared_ptr<redis::connection> conn_;
  keys keys_;
  std::chrono::milliseconds keep_;
  bool enabled_;
};

}  // namespace pushonce
