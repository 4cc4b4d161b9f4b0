#pragma once
// The floor stand-in's sockets (bench/floor_logic.hpp decides): HTTP and WebSocket on
// loopback ports of its own, on the io_context it is given (its own thread, so its CPU
// is counted apart from the load generator's).

#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <memory>
#include <vector>

namespace pushonce::bench {

class floor_server {
 public:
  floor_server(boost::asio::io_context& io, std::uint64_t ports, std::uint64_t duplicate_every);
  ~floor_server();
  /// The ports it listens on (127.0.0.1); the first also takes POST /api/publish.
  const std::vector<std::uint16_t>& ports() const;

 private:
  struct impl;
  std::shared_ptr<impl> impl_;
};

}  // namespace pushonce::bench
