#pragma once
// The address a request comes from (docs/security.md "Behind a proxy"), without sockets:
// the TCP peer, unless the peer is a trusted proxy (--trusted-proxy / PUSHONCE_TRUSTED_PROXY)
// and the request carries X-Forwarded-For; then the rightmost hop of that header that is
// not itself a trusted proxy. Used by the per-address limits and in logs.

#include <boost/asio/ip/address.hpp>
#include <string>
#include <string_view>

#include "gateway/state/limit_settings.hpp"

namespace pushonce::gateway {

/// The client's address as text. `forwarded_for` is the X-Forwarded-For value (several
/// headers joined with ","), empty when there is none.
std::string client_address(const boost::asio::ip::address& peer, std::string_view forwarded_for,
                           const trusted_proxies& trusted);

/// True for a loopback client (127.0.0.0/8, ::1, ::ffff:127.x): a process on this host,
/// to which the per-address caps do not apply (docs/security.md).
bool is_loopback_client(std::string_view client);

}  // namespace pushonce::gateway
