#include "core/trace.hpp"

#include <boost/asio/detached.hpp>
#include <boost/json/serialize.hpp>

namespace pushonce {

trace_lookup trace_lookup_of(const std::string& arg, const std::optional<std::string>& user) {
  trace_lookup t;
  if (user) {
    if (arg.empty()) {
      t.error = "an empty idempotency key";
    } else {
      t.key = arg;
      t.user = *user;
    }
  } else if (!arg.empty() && arg.size() <= 18 &&
             arg.find_first_not_of("0123456789") == std::string::npos) {
    t.id = arg;
  } else {
    t.error = "no message " + arg +
              " (message ids are decimal digits; for the message published with --id " + arg +
              ": trace " + arg + " --user USER)";
  }
  return t;
}

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
