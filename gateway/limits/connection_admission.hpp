#pragma once
// Whether the gateway takes a connection, a request and a WebSocket upgrade, decided without
// sockets (docs/security.md "Limits"): the socket code (http_connection) asks at each step and
// carries out the verdict. Every slot taken is held in the connection's connection_info and
// given back when it ends.
//
//   accept   the TCP peer's connection slot (--max-connections, and --max-connections-per-ip
//            unless the peer is loopback or a trusted proxy, which carry many clients)
//   request  the client address of this request (X-Forwarded-For from a trusted proxy, read
//            on every request: a proxy reuses one upstream connection for many clients); a
//            forwarded client holds a slot of --max-connections-per-ip under its own address
//            while its requests come over the connection
//   upgrade  shutting down, the Origin, then --max-sessions-per-ip for the request's client
//
// A refusal is a 503 (caps, shutting down) or a 403 (origin) with a reason, and the
// connection is closed after the answer.

#include <boost/asio/ip/address.hpp>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/limits/client_address.hpp"
#include "gateway/limits/connection_info.hpp"
#include "gateway/limits/slot_counter.hpp"

namespace pushonce::gateway {

struct admission_verdict {
  unsigned status = 0;       // 0: admitted; else the HTTP status of the answer (503, 403)
  std::string reason;        // the answer's message
  std::string_view log_why;  // the option that refused it, for the debug log line
  explicit operator bool() const { return status == 0; }
};

/// The Origin rule of an upgrade (the contract): with --allowed-origin, only the listed
/// origins; without it, any. No Origin header (not a browser) always passes. Under
/// --dev-auth without a list the gateway warns at start that any page can open a session.
struct origin_policy {
  std::vector<std::string> allowed;  // --allowed-origin
};

/// True when a browser page at `origin` ("" when the header is absent) may open a session on
/// a gateway reached as `host` (the Host header).
bool origin_allowed(const origin_policy& p, std::string_view origin, std::string_view host);

class connection_admission {
 public:
  connection_admission(std::shared_ptr<slot_counter> connections,
                       std::shared_ptr<slot_counter> forwarded_connections,
                       std::shared_ptr<slot_counter> sessions_per_ip, trusted_proxies trusted,
                       origin_policy origins);

  /// At accept: the peer's connection slot into `info.connection` (info.client is the peer).
  admission_verdict on_accept(const boost::asio::ip::address& peer, connection_info& info) const;
  /// At each request: info.client becomes the request's client; a forwarded client's slot
  /// moves to it when it changed.
  admission_verdict on_request(const boost::asio::ip::address& peer, std::string_view forwarded_for,
                               connection_info& info) const;
  /// A WebSocket upgrade of info.client's request: the session slot into `info.session`.
  admission_verdict on_upgrade(std::string_view origin, std::string_view host, bool stopping,
                               connection_info& info) const;

 private:
  std::shared_ptr<slot_counter> connections_;
  std::shared_ptr<slot_counter> forwarded_;
  std::shared_ptr<slot_counter> sessions_;
  trusted_proxies trusted_;
  origin_policy origins_;
};

}  // namespace pushonce::gateway
