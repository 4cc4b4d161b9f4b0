#pragma once
// The limits' settings as gateway_settings holds them (docs/security.md): the frame rates of
// a session (frame_limiter) and the trusted proxies whose X-Forwarded-For names the client
// (client_address). Plain values, parsed once at start; no sockets.

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/network_v4.hpp>
#include <boost/asio/ip/network_v6.hpp>
#include <cstdint>
#include <string_view>
#include <variant>
#include <vector>

namespace pushonce::gateway {

struct rate_limits {
  double frames_per_s = 100;  // 0: no limit
  double frame_burst = 200;
  double queue_ops_per_s = 5;  // join / leave
  double queue_op_burst = 20;
  std::uint32_t strikes = 20;  // refused frames in a row before the close
};

class trusted_proxies {
 public:
  /// "ADDR[,ADDR|CIDR...]" (IPv4 or IPv6, spaces allowed around commas); throws
  /// std::invalid_argument naming the bad entry. An empty text trusts nobody.
  static trusted_proxies parse(std::string_view text);

  bool contains(const boost::asio::ip::address& a) const;
  bool empty() const { return nets_.empty(); }

 private:
  std::vector<std::variant<boost::asio::ip::network_v4, boost::asio::ip::network_v6>> nets_;
};

/// An IPv4-mapped IPv6 address (::ffff:a.b.c.d) as the IPv4 address; any other as it is.
boost::asio::ip::address unmapped_address(const boost::asio::ip::address& a);

}  // namespace pushonce::gateway
