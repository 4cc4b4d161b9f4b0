#include "tests/support/sse_client.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

namespace pushonce::test {

sse_client::~sse_client() {
  close();
}

void sse_client::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

bool sse_client::fill(std::chrono::milliseconds timeout) {
  if (fd_ < 0) return false;
  pollfd p{fd_, POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(timeout.count())) <= 0) return false;
  char chunk[8192];
  auto n = ::recv(fd_, chunk, sizeof chunk, 0);
  if (n <= 0) {
    ended_ = true;
    close();
    return false;
  }
  buf_.append(chunk, static_cast<std::size_t>(n));
  return true;
}

int sse_client::open(const std::string& host, std::uint16_t port, const std::string& target,
                     const headers& extra, std::chrono::milliseconds timeout) {
  close();
  ended_ = false;
  buf_.clear();
  head_.clear();
  body_.clear();
  fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  ::inet_pton(AF_INET, host.c_str(), &a.sin_addr);
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close();
    return 0;
  }
  std::string req = "GET " + target + " HTTP/1.1\r\nHost: " + host + ":" + std::to_string(port) +
                    "\r\nAccept: text/event-stream\r\n";
  for (const auto& [k, v] : extra) req += k + ": " + v + "\r\n";
  req += "\r\n";
  if (::send(fd_, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size())) {
    close();
    return 0;
  }
  auto deadline = std::chrono::steady_clock::now() + timeout;
  std::size_t end;
  while ((end = buf_.find("\r\n\r\n")) == std::string::npos) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 || !fill(left)) return 0;
  }
  head_ = buf_.substr(0, end);
  buf_.erase(0, end + 4);
  int status = 0;
  if (head_.size() > 12) status = std::atoi(head_.c_str() + 9);
  if (status != 200) {
    // The body of an error answer: Content-Length bytes (the gateway closes after it).
    auto cl = head_.find("Content-Length: ");
    std::size_t want = cl == std::string::npos ? 0 : std::stoul(head_.substr(cl + 16));
    while (buf_.size() < want && fill(timeout)) {
    }
    body_ = buf_.substr(0, want);
  }
  return status;
}

std::optional<sse_event> sse_client::next(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    // One event: lines up to a blank line.
    auto end = buf_.find("\n\n");
    if (end != std::string::npos) {
      std::string block = buf_.substr(0, end + 1);
      buf_.erase(0, end + 2);
      sse_event e;
      bool any = false;
      std::size_t pos = 0;
      while (pos < block.size()) {
        auto nl = block.find('\n', pos);
        std::string line = block.substr(pos, nl - pos);
        pos = nl + 1;
        if (line.empty() || line[0] == ':') continue;
        auto colon = line.find(':');
        std::string field = line.substr(0, colon);
        std::string value = colon == std::string::npos ? "" : line.substr(colon + 1);
        if (!value.empty() && value[0] == ' ') value.erase(0, 1);
        if (field == "event") {
          e.event = value;
        } else if (field == "id") {
          e.id = value;
        } else if (field == "data") {
          if (any) e.data += '\n';
          e.data += value;
          any = true;
        }
      }
      if (any) return e;
      continue;  // a comment or retry: not an event
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 || !fill(left)) return std::nullopt;
  }
}

}  // namespace pushonce::test
