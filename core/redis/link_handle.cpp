#include "core/redis/link_handle.hpp"

#include <boost/asio/post.hpp>

#include "core/redis/link.hpp"

namespace pushonce::redis {

link_handle::~link_handle() {
  stop();
}

void link_handle::start() {
  boost::asio::post(io_->strand(), [io = io_, owner = owner_] { io->start(owner); });
}

void link_handle::stop() {
  boost::asio::post(io_->strand(), [io = io_, owner = owner_] { io->stop(); });
}

void link_handle::on_connect(std::function<void()> fn) {
  boost::asio::post(io_->strand(), [io = io_, owner = owner_, fn = std::move(fn)]() mutable {
    io->set_on_connect(std::move(fn));
  });
}

bool link_handle::connected() const {
  return io_->connected();
}

const connection_options& link_handle::options() const {
  return io_->options();
}

}  // namespace pushonce::redis
