#pragma once
// Client hosts with their own addresses for tests of the per-address limits: a network
// namespace joined to this host by a veth pair, with several addresses inside (each one a
// client host as the gateway sees it; loopback clients are exempt from those limits). A
// program under test listens on 0.0.0.0 (or on host_addr) to be reached. Needs root (ip
// netns, ip link); ok() is false otherwise. Removed on destruction.
//
// raw_http is a plain TCP connection for what an HTTP library hides: requests written by
// hand, answers read byte by byte, connections held open and silent.

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace pushonce::test {

class client_hosts {
 public:
  /// `count` client addresses (at most 200).
  explicit client_hosts(int count = 2);
  ~client_hosts();
  client_hosts(const client_hosts&) = delete;
  client_hosts& operator=(const client_hosts&) = delete;

  bool ok() const { return ok_; }
  /// The host's end of the link (what the clients connect to).
  const std::string& host_addr() const { return host_addr_; }
  /// The i-th client address.
  const std::string& client(int i) const { return clients_.at(static_cast<std::size_t>(i)); }
  /// A TCP connection from the i-th client address to host_addr():port; -1 on failure.
  int connect_from(int i, std::uint16_t port) const;

 private:
  std::string ns_, host_if_, ns_if_, host_addr_;
  std::vector<std::string> clients_;
  bool ok_ = false;
};

class raw_http {
 public:
  /// A connection to 127.0.0.1:port.
  explicit raw_http(std::uint16_t port);
  /// Takes an open descriptor (client_hosts::connect_from).
  explicit raw_http(int fd);
  ~raw_http();
  raw_http(const raw_http&) = delete;
  raw_http& operator=(const raw_http&) = delete;

  bool connected() const { return fd_ >= 0; }
  bool send(const std::string& bytes);
  /// The header of one response (up to and with the blank line); "" when the connection
  /// ended first or nothing came within `timeout`.
  std::string header(std::chrono::milliseconds timeout = std::chrono::seconds(5));
  /// A header and its Content-Length body.
  std::string response(std::chrono::milliseconds timeout = std::chrono::seconds(5));
  /// Exactly n bytes (fewer when the connection ends or the time passes).
  std::string read(std::size_t n, std::chrono::milliseconds timeout = std::chrono::seconds(5));
  /// True when the peer closed the connection (EOF or reset) within `timeout`; bytes that
  /// arrive meanwhile are dropped.
  bool ended(std::chrono::milliseconds timeout = std::chrono::seconds(5));

 private:
  int recv_byte(char& c, std::chrono::steady_clock::time_point deadline);
  int fd_ = -1;
};

/// "Content-Length" of a response header (0 when absent).
std::size_t content_length(const std::string& header);

}  // namespace pushonce::test
