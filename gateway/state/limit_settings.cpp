#include "gateway/state/limit_settings.hpp"

#include <stdexcept>
#include <string>

namespace pushonce::gateway {

namespace ip = boost::asio::ip;

namespace {

std::string_view trim_blanks(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

ip::address unmapped_address(const ip::address& a) {
  if (a.is_v6() && a.to_v6().is_v4_mapped()) return ip::make_address_v4(ip::v4_mapped, a.to_v6());
  return a;
}

trusted_proxies trusted_proxies::parse(std::string_view text) {
  trusted_proxies t;
  while (!text.empty()) {
    auto comma = text.find(',');
    auto item = trim_blanks(text.substr(0, comma));
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
      auto a = unmapped_address(ip::make_address(s, ec));
      if (!ec && a.is_v4()) t.nets_.emplace_back(ip::network_v4(a.to_v4(), 32));
      if (!ec && a.is_v6()) t.nets_.emplace_back(ip::network_v6(a.to_v6(), 128));
    }
    if (ec) throw std::invalid_argument("'" + s + "' is not an IP address or CIDR network");
  }
  return t;
}

bool trusted_proxies::contains(const ip::address& raw) const {
  auto a = unmapped_address(raw);
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

}  // namespace pushonce::gateway
