#include "core/redis/resp_stream.hpp"

#include <fmt/format.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <charconv>

#include "core/redis/error.hpp"
#include "core/redis/error_reply.hpp"
#include "core/redis/sentinel_choice.hpp"
#include "core/use_tuple.hpp"

namespace pushonce::redis {

namespace asio = boost::asio;
using asio::ip::tcp;
using namespace asio::experimental::awaitable_operators;

namespace {

constexpr std::size_t read_chunk = 64 * 1024;

void append_number(std::string& out, std::size_t n) {
  char buf[24];
  auto res = std::to_chars(buf, buf + sizeof buf, n);
  out.append(buf, res.ptr);
}

command login_command(const connection_options& opts) {
  if (opts.where.user.empty()) return {"AUTH", opts.where.password};
  return {"AUTH", opts.where.user, opts.where.password};
}

}  // namespace

resp_stream::resp_stream(asio::any_io_executor ex)
    : socket_(std::move(ex)), buf_(new char[read_chunk]) {}

resp_stream::~resp_stream() = default;

void resp_stream::close() {
  boost::system::error_code ignored;
  // No TLS close_notify: the peer sees the TCP connection end, as with a plain one.
  auto& s = tls_ ? tls_->next_layer() : socket_;
  s.shutdown(tcp::socket::shutdown_both, ignored);
  s.close(ignored);
}

void resp_stream::encode(const command& cmd, std::string& out) {
  out.push_back('*');
  append_number(out, cmd.size());
  out.append("\r\n");
  for (const auto& arg : cmd) {
    out.push_back('$');
    append_number(out, arg.size());
    out.append("\r\n");
    out.append(arg);
    out.append("\r\n");
  }
}

asio::awaitable<std::error_code> resp_stream::read(reply& out) {
  std::error_code ec;
  while (!reader_.take(out, ec)) {
    boost::system::error_code rec;
    std::size_t n = 0;
    if (tls_) {
      auto [e, got] =
          co_await tls_->async_read_some(asio::buffer(buf_.get(), read_chunk), use_tuple);
      rec = e;
      n = got;
    } else {
      auto [e, got] =
          co_await socket_.async_read_some(asio::buffer(buf_.get(), read_chunk), use_tuple);
      rec = e;
      n = got;
    }
    if (rec) co_return rec;
    if (!reader_.feed(buf_.get(), n)) co_return error::protocol;
  }
  co_return ec;
}

// The TLS context of a rediss:// endpoint: the server certificate is verified against the CA
// file, or the system CA store; the client certificate is presented when given.
static std::shared_ptr<asio::ssl::context> make_tls_context(const tls_files& files,
                                                            boost::system::error_code& ec) {
  auto ctx = std::make_shared<asio::ssl::context>(asio::ssl::context::tls_client);
  ctx->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                       asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                       asio::ssl::context::no_tlsv1_1,
                   ec);
  if (!ec) ctx->set_verify_mode(asio::ssl::verify_peer, ec);
  if (!ec && files.ca.empty()) ctx->set_default_verify_paths(ec);
  if (!ec && !files.ca.empty()) ctx->load_verify_file(files.ca, ec);
  if (!ec && !files.cert.empty()) ctx->use_certificate_chain_file(files.cert, ec);
  if (!ec && !files.key.empty()) ctx->use_private_key_file(files.key, asio::ssl::context::pem, ec);
  if (ec) return nullptr;
  return ctx;
}

asio::awaitable<std::error_code> resp_stream::call(const command& cmd, reply& out) {
  std::string wire;
  encode(cmd, wire);
  if (auto ec = co_await write_all(asio::buffer(wire))) co_return ec;
  co_return co_await read(out);
}

asio::awaitable<std::error_code> resp_stream::write_all(asio::const_buffer data) {
  if (tls_) {
    auto [ec, n] = co_await asio::async_write(*tls_, data, use_tuple);
    co_return ec;
  }
  auto [ec, n] = co_await asio::async_write(socket_, data, use_tuple);
  co_return ec;
}

// A fresh TLS stream for this connection: SNI (for a host name, not an address) and host
// name verification against the certificate's names.
asio::awaitable<std::error_code> resp_stream::start_tls(const connection_options& opts) {
  const auto& host = opts.where.host;
  boost::system::error_code not_address;
  asio::ip::make_address(host, not_address);
  if (not_address && SSL_set_tlsext_host_name(tls_->native_handle(), host.c_str()) != 1)
    co_return std::make_error_code(std::errc::invalid_argument);
  tls_->set_verify_callback(asio::ssl::host_name_verification(host));
  auto [hec] = co_await tls_->async_handshake(asio::ssl::stream_base::client, use_tuple);
  co_return hec;
}

asio::awaitable<std::error_code> resp_stream::connect(const connection_options& opts) {
  close();
  refusal_.clear();
  reader_.reset();
  auto ex = socket_.get_executor();
  tls_.reset();
  socket_ = tcp::socket(ex);
  if (opts.where.tls) {
    if (!tls_context_) {
      boost::system::error_code ec;
      tls_context_ = make_tls_context(opts.where.certs, ec);
      if (ec) co_return ec;
    }
    tls_.emplace(ex, *tls_context_);
  }
  auto& sock = tls_ ? tls_->next_layer() : socket_;

  auto handshake = [&]() -> asio::awaitable<std::error_code> {
    tcp::resolver resolver(ex);
    auto [rec, endpoints] = co_await resolver.async_resolve(
        opts.where.host, std::to_string(opts.where.port), use_tuple);
    if (rec) co_return rec;
    auto [cec, ep] = co_await asio::async_connect(sock, endpoints, use_tuple);
    if (cec) co_return cec;
    boost::system::error_code opt_ec;  // never throw here: it would end the run loop
    sock.set_option(tcp::no_delay(true), opt_ec);
    if (opt_ec) co_return opt_ec;
    if (tls_) {
      auto tec = co_await start_tls(opts);
      if (tec) co_return tec;
    }

    std::vector<command> hello;
    if (!opts.where.password.empty()) hello.push_back(login_command(opts));
    if (opts.where.db != 0) hello.push_back({"SELECT", std::to_string(opts.where.db)});
    if (!opts.client_name.empty()) hello.push_back({"CLIENT", "SETNAME", opts.client_name});
    if (opts.sentinel.enabled()) hello.push_back({"ROLE"});
    if (hello.empty()) co_return std::error_code{};
    std::string wire;
    for (const auto& c : hello) encode(c, wire);
    auto wec = co_await write_all(asio::buffer(wire));
    if (wec) co_return wec;
    for (std::size_t i = 0; i < hello.size(); ++i) {
      reply r;
      if (auto e = co_await read(r)) co_return e;
      // A wrong password or db is not a transport fault, but retrying will not fix it
      // either: error::login_refused, with Redis's own words and the address kept for the
      // log and the caller (never the password: AUTH's arguments are not repeated).
      if (r.is_error()) {
        auto what = classify_error_code(r.error_code());
        if (what == error_reply_class::failover || what == error_reply_class::unavailable)
          co_return error::refused;  // BUSY, LOADING, READONLY ...: try again later
        refusal_ = fmt::format("{} refused {}: {}", opts.where.display(), hello[i].front(), r.str);
        co_return error::login_refused;
      }
      if (hello[i].front() == "ROLE" && !sentinel_choice::is_master(r)) co_return error::not_master;
    }
    co_return std::error_code{};
  };

  asio::steady_timer timer(ex, opts.connect_timeout);
  auto outcome = co_await (handshake() || timer.async_wait(use_tuple));
  if (outcome.index() == 1) {
    close();
    co_return error::timeout;
  }
  auto ec = std::get<0>(outcome);
  if (ec) close();
  co_return ec;
}

}  // namespace pushonce::redis
