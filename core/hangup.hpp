#pragma once
// SIGHUP for the daemons that have nothing to read again (the leader, the workers): a
// `kill -HUP` (a log rotation script, `systemctl reload`, a closed terminal) must never end
// them. The signal is caught while this object lives and answered with one log line.

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <csignal>

#include "core/log.hpp"

namespace pushonce {

class hangup_guard {
 public:
  explicit hangup_guard(boost::asio::io_context& io) : hangups_(io, SIGHUP) { arm(); }
  hangup_guard(const hangup_guard&) = delete;
  hangup_guard& operator=(const hangup_guard&) = delete;

 private:
  void arm() {
    hangups_.async_wait([this](boost::system::error_code ec, int) {
      if (ec) return;
      log::warn(
          "SIGHUP: this program reads its settings only at start (restart it to apply new "
          "ones); still running");
      arm();
    });
  }
  boost::asio::signal_set hangups_;
};

}  // namespace pushonce
