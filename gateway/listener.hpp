#pragma once
// Accepts TCP connections; each gets its own strand and an http_session.

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <memory>

namespace pushonce::gateway {

struct gateway_state;

class listener : public std::enable_shared_from_this<listener> {
 public:
  /// Binds and listens; throws std::system_error when the address cannot be used.
  listener(boost::asio::io_context& ioc, boost::asio::ip::tcp::endpoint where,
           std::shared_ptr<gateway_state> state);

  void run();
  /// Stops accepting (thread-safe).
  void stop();
  boost::asio::ip::tcp::endpoint local_endpoint() const;

 private:
  void do_accept();
  void on_accept(boost::system::error_code ec, boost::asio::ip::tcp::socket socket);

  boost::asio::io_context& ioc_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::shared_ptr<gateway_state> state_;
};

}  // namespace pushonce::gateway
