#include "gateway/limits/connection_admission.hpp"

#include <algorithm>
#include <cctype>

namespace pushonce::gateway {

namespace ip = boost::asio::ip;

namespace {

// "host", "host:port", "[v6]" or "[v6]:port" -> the host, lower case.

admission_verdict refused(unsigned status, std::string reason, std::string_view why) {
  return {status, std::move(reason), why};
}

std::string plain_text(const ip::address& a) {
  if (a.is_v6() && a.to_v6().is_v4_mapped())
    return ip::make_address_v4(ip::v4_mapped, a.to_v6()).to_string();
  return a.to_string();
}

}  // namespace

bool origin_allowed(const origin_policy& p, std::string_view origin, std::string_view) {
  if (origin.empty() || p.allowed.empty()) return true;  // not a browser, or no list
  return std::find(p.allowed.begin(), p.allowed.end(), origin) != p.allowed.end();
}

connection_admission::connection_admission(std::shared_ptr<slot_counter> connections,
                                           std::shared_ptr<slot_counter> forwarded_connections,
                                           std::shared_ptr<slot_counter> sessions_per_ip,
                                           trusted_proxies trusted, origin_policy origins)
    : connections_(std::move(connections)),
      forwarded_(std::move(forwarded_connections)),
      sessions_(std::move(sessions_per_ip)),
      trusted_(std::move(trusted)),
      origins_(std::move(origins)) {}

admission_verdict connection_admission::on_accept(const ip::address& peer,
                                                  connection_info& info) const {
  info.client = plain_text(peer);
  // Loopback peers (processes on this host: a load generator, a proxy) and trusted proxies
  // are capped in total only; a proxy's clients are capped per request (on_request).
  bool per_address = !is_loopback_client(info.client) && !trusted_.contains(peer);
  auto r = connections_->acquire(info.client, per_address);
  if (r.held) {
    info.connection = std::move(r.held);
    return {};
  }
  if (r.why == slot_counter::refusal::total)
    return refused(503, "too many connections", "--max-connections");
  return refused(503, "too many connections from this address", "--max-connections-per-ip");
}

admission_verdict connection_admission::on_request(const ip::address& peer,
                                                   std::string_view forwarded_for,
                                                   connection_info& info) const {
  info.client = client_address(peer, forwarded_for, trusted_);
  bool forwarded = info.client != plain_text(peer);
  if (!forwarded) {
    info.forwarded = {};
    return {};
  }
  if (info.forwarded && info.forwarded.key() == info.client) return {};
  info.forwarded = {};
  auto r = forwarded_->acquire(info.client, !is_loopback_client(info.client));
  if (r.held) {
    info.forwarded = std::move(r.held);
    return {};
  }
  return refused(503, "too many connections from this address", "--max-connections-per-ip");
}

admission_verdict connection_admission::on_upgrade(std::string_view origin, std::string_view host,
                                                   bool stopping, connection_info& info) const {
  if (stopping) return refused(503, "shutting down", "shutting down");
  if (!origin_allowed(origins_, origin, host))
    return refused(403, "origin not allowed",
                   origins_.allowed.empty() ? "--dev-auth origin" : "--allowed-origin");
  auto r = sessions_->acquire(info.client, !is_loopback_client(info.client));
  if (!r.held) return refused(503, "too many sessions from this address", "--max-sessions-per-ip");
  info.session = std::move(r.held);
  return {};
}

}  // namespace pushonce::gateway
