#pragma once
// A TCP socket to Redis plus hiredis's RESP reader: connect (with AUTH/SELECT/CLIENT
// SETNAME), encode commands, read replies one at a time. hiredis is only the codec here:
// no hiredis context owns the socket (hiredis 0.14's async layer has traps: a context that frees
// itself, replies freed after the callback, no SSUBSCRIBE).

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <memory>
#include <string>
#include <system_error>

#include "core/redis/endpoint.hpp"
#include "core/redis/reply.hpp"

struct redisReader;

namespace pushonce::redis {

class resp_stream {
 public:
  explicit resp_stream(boost::asio::any_io_executor ex);
  ~resp_stream();
  resp_stream(const resp_stream&) = delete;
  resp_stream& operator=(const resp_stream&) = delete;

  /// Resolves, connects and logs in within opts.connect_timeout.
  boost::asio::awaitable<std::error_code> connect(const connection_options& opts);
  /// Reads the next complete reply.
  boost::asio::awaitable<std::error_code> read(reply& out);
  void close();
  boost::asio::ip::tcp::socket& socket() { return socket_; }

  /// The RESP encoding of a command, appended to out.
  static void encode(const command& cmd, std::string& out);

 private:
  bool take_reply(reply& out, std::error_code& ec);
  void reset_reader();

  boost::asio::ip::tcp::socket socket_;
  redisReader* reader_ = nullptr;
  std::unique_ptr<char[]> buf_;
};

}  // namespace pushonce::redis
