#include "gateway/limits/client_address.hpp"

namespace pushonce::gateway {

namespace ip = boost::asio::ip;

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

std::string client_address(const ip::address& peer, std::string_view forwarded_for,
                           const trusted_proxies& trusted) {
  auto hop = unmapped_address(peer);
  if (trusted.empty() || !trusted.contains(hop)) return hop.to_string();
  // Right to left: each hop was added by the one after it; stop at the first hop that is
  // not a trusted proxy. An entry that is not an address ends the walk: the last good hop
  // (a trusted proxy) is the best we know.
  while (!forwarded_for.empty()) {
    auto comma = forwarded_for.rfind(',');
    auto item =
        trim(comma == std::string_view::npos ? forwarded_for : forwarded_for.substr(comma + 1));
    forwarded_for =
        comma == std::string_view::npos ? std::string_view{} : forwarded_for.substr(0, comma);
    if (item.empty()) continue;
    boost::system::error_code ec;
    auto a = ip::make_address(std::string(item), ec);
    if (ec) break;
    hop = unmapped_address(a);
    if (!trusted.contains(hop)) break;
  }
  return hop.to_string();
}

bool is_loopback_client(std::string_view client) {
  boost::system::error_code ec;
  auto a = boost::asio::ip::make_address(std::string(client), ec);
  if (ec) return false;
  if (a.is_v6() && a.to_v6().is_v4_mapped())
    return boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, a.to_v6()).is_loopback();
  return a.is_loopback();
}

}  // namespace pushonce::gateway
