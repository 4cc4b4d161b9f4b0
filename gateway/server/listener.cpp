#include "gateway/server/listener.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>

#include "core/log.hpp"
#include "gateway/http/http_connection.hpp"

namespace pushonce::gateway {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

listener::listener(asio::io_context& ioc, tcp::endpoint where, std::shared_ptr<gateway_state> state,
                   bool strands)
    : ioc_(ioc),
      acceptor_(asio::make_strand(ioc)),
      retry_timer_(acceptor_.get_executor()),
      state_(std::move(state)),
      strands_(strands) {
  acceptor_.open(where.protocol());
  acceptor_.set_option(asio::socket_base::reuse_address(true));
  acceptor_.bind(where);
  acceptor_.listen(asio::socket_base::max_listen_connections);
}

void listener::run() {
  asio::post(acceptor_.get_executor(), [self = shared_from_this()] { self->do_accept(); });
}

void listener::stop() {
  asio::post(acceptor_.get_executor(), [self = shared_from_this()] {
    boost::system::error_code ec;
    self->acceptor_.close(ec);
    self->retry_timer_.cancel();
  });
}

tcp::endpoint listener::local_endpoint() const {
  return acceptor_.local_endpoint();
}

void listener::do_accept() {
  auto on_accept = [self = shared_from_this()](boost::system::error_code ec, tcp::socket s) {
    self->on_accept(ec, std::move(s));
  };
  if (strands_)
    acceptor_.async_accept(asio::make_strand(ioc_), std::move(on_accept));
  else
    acceptor_.async_accept(ioc_.get_executor(), std::move(on_accept));
}

void listener::on_accept(boost::system::error_code ec, tcp::socket socket) {
  if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
  if (ec) {
    std::error_code sec(ec.value(), ec.category() == boost::system::system_category()
                                        ? std::system_category()
                                        : std::generic_category());
    auto d = backoff_.on_error(sec);
    if (d.delay.count() > 0) {
      if (d.warn)
        log::warn("listener: accept: {}; retrying every {} ms until a connection is accepted",
                  ec.message(), d.delay.count());
      retry_timer_.expires_after(d.delay);
      retry_timer_.async_wait([self = shared_from_this()](boost::system::error_code tec) {
        if (tec || !self->acceptor_.is_open()) return;
        self->do_accept();
      });
      return;
    }
    log::warn("listener: accept: {}", ec.message());
  } else {
    if (backoff_.on_accepted())
      log::info("listener: accepting again after {} retries", backoff_.retries());
    boost::system::error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);
    start_http_session(std::move(socket), state_);
  }
  do_accept();
}

}  // namespace pushonce::gateway
