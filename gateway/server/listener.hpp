#pragma once
// Accepts TCP connections; each gets an http_connection, on its own strand when several
// threads run the event loop (with one thread a strand would only add a queue and a lock
// to every handler). Out of descriptors or memory, it waits before the next accept
// (accept_backoff) instead of spinning.

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <memory>

#include "gateway/server/accept_backoff.hpp"

namespace pushonce::gateway {

struct gateway_state;

class listener : public std::enable_shared_from_this<listener> {
 public:
  /// Binds and listens; throws std::system_error when the address cannot be used.
  /// `strands`: each connection on its own strand (the event loop runs on several threads).
  listener(boost::asio::io_context& ioc, boost::asio::ip::tcp::endpoint where,
           std::shared_ptr<gateway_state> state, bool strands);

  void run();
  /// Stops accepting (thread-safe).
  void stop();
  boost::asio::ip::tcp::endpoint local_endpoint() const;

 private:
  void do_accept();
  void on_accept(boost::system::error_code ec, boost::asio::ip::tcp::socket socket);

  boost::asio::io_context& ioc_;
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::steady_timer retry_timer_;  // on the acceptor's strand
  accept_backoff backoff_;
  std::shared_ptr<gateway_state> state_;
  bool strands_;
};

}  // namespace pushonce::gateway
