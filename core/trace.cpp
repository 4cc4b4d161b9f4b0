#include "core/trace.hpp"

#include <boost/asio/detached.hpp>
#include <boost/json/serialize.hpp>

namespace pushonce {

void tracer::record(const std::string& id, boost::json::object event) const {
  if (!enabled_) return;
  event["ts"] = std::chrono::duration_cast<std::chrono::milliseconds>(
                    std::chrono::system_clock::now().time_since_epoch())
                    .count();
  auto k = key(id);
  conn_->async_exec(redis::command{"RPUSH", k, boost::json::serialize(event)},
                    boost::asio::detached);
  conn_->async_exec(redis::command{"PEXPIRE", k, std::to_string(keep_.count())},
                    boost::asio::detached);
}

}  // namespace pushonce
