#pragma once
// The history of a message (`pushonce-leader trace ID`): JSON events appended to
// NS:trace:<id> (a list kept for the dedup window) by whoever acts on the message.
// Writing is fire-and-forget: tracing never slows or fails the pipeline.

#include <boost/json/object.hpp>
#include <chrono>
#include <memory>
#include <string>

#include "core/defaults.hpp"
#include "core/keys.hpp"
#include "core/redis/connection.hpp"

namespace pushonce {

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
