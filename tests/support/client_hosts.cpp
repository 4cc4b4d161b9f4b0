#include "tests/support/client_hosts.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <thread>

namespace pushonce::test {

namespace {

bool sh(const std::string& cmd) {
  return std::system((cmd + " >/dev/null 2>&1").c_str()) == 0;
}

int tcp_connect(const std::string& from, const std::string& to, std::uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in src{};
  src.sin_family = AF_INET;
  if (!from.empty()) {
    ::inet_pton(AF_INET, from.c_str(), &src.sin_addr);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&src), sizeof src) != 0) {
      ::close(fd);
      return -1;
    }
  }
  sockaddr_in dst{};
  dst.sin_family = AF_INET;
  dst.sin_port = htons(port);
  ::inet_pton(AF_INET, to.c_str(), &dst.sin_addr);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&dst), sizeof dst) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

client_hosts::client_hosts(int count) {
  auto pid = ::getpid();
  auto n = static_cast<int>(pid % 200) + 20;
  ns_ = fmt::format("pohosts{}", pid);
  host_if_ = fmt::format("pohh{}", pid % 100000);
  ns_if_ = fmt::format("pohn{}", pid % 100000);
  host_addr_ = fmt::format("10.232.{}.1", n);
  ok_ = sh("ip netns add " + ns_) &&
        sh(fmt::format("ip link add {} type veth peer name {}", host_if_, ns_if_)) &&
        sh(fmt::format("ip link set {} netns {}", ns_if_, ns_)) &&
        sh(fmt::format("ip addr add {}/24 dev {}", host_addr_, host_if_)) &&
        sh(fmt::format("ip link set {} up", host_if_)) &&
        sh(fmt::format("ip netns exec {} ip link set {} up", ns_, ns_if_)) &&
        sh(fmt::format("ip netns exec {} ip link set lo up", ns_));
  for (int i = 0; ok_ && i < count && i < 200; ++i) {
    clients_.push_back(fmt::format("10.232.{}.{}", n, i + 2));
    ok_ =
        sh(fmt::format("ip netns exec {} ip addr add {}/24 dev {}", ns_, clients_.back(), ns_if_));
  }
}

client_hosts::~client_hosts() {
  sh("ip link del " + host_if_);
  sh("ip netns del " + ns_);
}

int client_hosts::connect_from(int i, std::uint16_t port) const {
  // A socket belongs to the network namespace of the thread that creates it.
  int fd = -1;
  std::thread t([&] {
    int nsfd = ::open(("/var/run/netns/" + ns_).c_str(), O_RDONLY | O_CLOEXEC);
    if (nsfd < 0) return;
    bool in = ::setns(nsfd, CLONE_NEWNET) == 0;
    ::close(nsfd);
    if (in) fd = tcp_connect(client(i), host_addr_, port);
  });
  t.join();
  return fd;
}

raw_http::raw_http(std::uint16_t port) : fd_(tcp_connect({}, "127.0.0.1", port)) {}

raw_http::raw_http(int fd) : fd_(fd) {}

raw_http::~raw_http() {
  if (fd_ >= 0) ::close(fd_);
}

bool raw_http::send(const std::string& s) {
  return fd_ >= 0 &&
         ::send(fd_, s.data(), s.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(s.size());
}

// 1: a byte; 0: the connection ended; -1: the time passed.
int raw_http::recv_byte(char& c, std::chrono::steady_clock::time_point deadline) {
  if (fd_ < 0) return 0;
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  if (left.count() <= 0) return -1;
  pollfd p{fd_, POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return -1;
  return ::recv(fd_, &c, 1, 0) == 1 ? 1 : 0;
}

std::string raw_http::header(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string out;
  char c;
  while (out.size() < 4 || out.compare(out.size() - 4, 4, "\r\n\r\n") != 0) {
    if (recv_byte(c, deadline) != 1) return {};
    out += c;
  }
  return out;
}

std::string raw_http::read(std::size_t n, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string out;
  char c;
  while (out.size() < n && recv_byte(c, deadline) == 1) out += c;
  return out;
}

std::string raw_http::response(std::chrono::milliseconds timeout) {
  auto h = header(timeout);
  if (h.empty()) return h;
  return h + read(content_length(h), timeout);
}

bool raw_http::ended(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  char c;
  for (;;) {
    int r = recv_byte(c, deadline);
    if (r == 0) return true;
    if (r < 0) return false;
  }
}

std::size_t content_length(const std::string& header) {
  for (const char* name : {"Content-Length: ", "content-length: "}) {
    auto at = header.find(name);
    if (at != std::string::npos) return std::stoul(header.substr(at + 16));
  }
  return 0;
}

}  // namespace pushonce::test
