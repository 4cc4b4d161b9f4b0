#include "gateway/limits/client_address.hpp"

#include <stdexcept>

namespace pushonce::gateway {

namespace ip = boost::asio::ip;

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// An IPv4-mapped IPv6 address (::ffff:a.b.c.d) is the IPv4 address.
ip::address plain(const ip::address& a) {
  if (a.is_v6() && a.to_v6().is_v4_mapped()) return ip::make_address_v4(ip::v4_mapped, a.to_v6());
  return a;
}

}  // namespace

trusted_proxies trusted_proxies::parse(std::string_view text) {
  trusted_proxies t;
  while (!text.empty()) {
    auto comma = text.find(',');
    auto item = trim(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    if (item.empty()) continue;
    std::string s(item);
    boost::system::error_code ec;
    if (s.find('/') != std::string::npos) {
      if (s.find(':') != std::string::npos) {
        auto n = ip::make_network_v6(s, ec);
        if (!ec) t.nets_.emplace_back(n.canonical());
      } else {
        auto n = ip::make_network_v4(s, ec);
        if (!ec) t.nets_.emplace_back(n.canonical());
      }
    } else {
      auto a = plain(ip::make_address(s, ec));
      if (!ec && a.is_v4()) t.nets_.emplace_back(ip::network_v4(a.to_v4(), 32));
      if (!ec && a.is_v6()) t.nets_.emplace_back(ip::network_v6(a.to_v6(), 128));
    }
    if (ec) throw std::invalid_argument("'" + s + "' is not an IP address or CIDR network");
  }
  return t;
}

bool trusted_proxies::contains(const ip::address& raw) const {
  auto a = plain(raw);
  for (const auto& n : nets_) {
    if (auto* v4 = std::get_if<ip::network_v4>(&n)) {
      if (a.is_v4() && ip::network_v4(a.to_v4(), 32).is_subnet_of(*v4)) return true;
      if (a.is_v4() && v4->prefix_length() == 32 && v4->address() == a.to_v4()) return true;
    } else if (auto* v6 = std::get_if<ip::network_v6>(&n)) {
      if (!a.is_v6()) continue;
      if (v6->prefix_length() == 128 ? v6->address() == a.to_v6()
                                     : ip::network_v6(a.to_v6(), 128).is_subnet_of(*v6))
        return true;
    }
  }
  return false;
}

std::string client_address(const ip::address& peer, std::string_view forwarded_for,
                           const trusted_proxies& trusted) {
  auto hop = plain(peer);
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
    hop = plain(a);
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
