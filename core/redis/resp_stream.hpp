#pragma once
// A TCP socket to Redis (or, for rediss://, an OpenSSL stream over one) plus the RESP
// decoder (resp_reader, hiredis's reader underneath): connect (TLS handshake, AUTH/SELECT/CLIENT
// SETNAME), encode commands, read replies one at a time. The plain path stays a bare tcp::socket:
// one predictable branch per read or write picks the stream, no virtual call and no copy. hiredis
// is only the codec here: no hiredis context owns the socket (hiredis 0.14's async layer has traps:
// a context that frees itself, replies freed after the callback, no SSUBSCRIBE).

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <memory>
#include <optional>
#include <string>
#include <system_error>

#include "core/redis/endpoint.hpp"
#include "core/redis/reply.hpp"
#include "core/redis/resp_reader.hpp"

namespace pushonce::redis {

class resp_stream {
 public:
  explicit resp_stream(boost::asio::any_io_executor ex);
  ~resp_stream();
  resp_stream(const resp_stream&) = delete;
  resp_stream& operator=(const resp_stream&) = delete;

  /// Resolves, connects and logs in within opts.connect_timeout. With a Sentinel in `opts`,
  /// the server must also answer ROLE as a master (else error::not_master).
  boost::asio::awaitable<std::error_code> connect(const connection_options& opts);
  /// Writes one command and reads its reply (no deadline: the caller races a timer).
  boost::asio::awaitable<std::error_code> call(const command& cmd, reply& out);
  /// Reads the next complete reply.
  boost::asio::awaitable<std::error_code> read(reply& out);
  void close();
  /// After connect() failed with error::login_refused: "HOST:PORT refused AUTH: WRONGPASS
  /// ..." (the server's address, the command and Redis's reply); else empty.
  const std::string& refusal() const { return refusal_; }
  /// The TLS stream of a rediss:// connection, else nullptr: write on it when there is one,
  /// else on socket().
  boost::asio::ssl::stream<boost::asio::ip::tcp::socket>* tls() { return tls_ ? &*tls_ : nullptr; }
  boost::asio::ip::tcp::socket& socket() { return socket_; }

  /// The RESP encoding of a command, appended to out.
  static void encode(const command& cmd, std::string& out);

 private:
  boost::asio::awaitable<std::error_code> write_all(boost::asio::const_buffer data);
  boost::asio::awaitable<std::error_code> start_tls(const connection_options& opts);

  boost::asio::ip::tcp::socket socket_;  // the connection when it is not TLS
  // rediss://: the TLS stream (a fresh one per connection; it owns its socket) and the
  // context built once from the endpoint's certificate files.
  std::optional<boost::asio::ssl::stream<boost::asio::ip::tcp::socket>> tls_;
  std::shared_ptr<boost::asio::ssl::context> tls_context_;
  resp_reader reader_;
  std::string refusal_;
  std::unique_ptr<char[]> buf_;
};

}  // namespace pushonce::redis
