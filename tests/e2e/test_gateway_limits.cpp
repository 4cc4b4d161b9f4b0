// End-to-end: pushonce-gateway at its descriptor limit. The gateway raises its soft
// RLIMIT_NOFILE to the hard limit and says so; out of descriptors, the listener waits
// between accepts (no spinning, one warn line per episode) and accepts again once
// descriptors are free.
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "tests/support/deployment.hpp"
#include "tests/support/process.hpp"
#include "tests/support/redis_server.hpp"
#include "tests/support/wait.hpp"
#include "tests/support/ws_client.hpp"

using namespace pushonce::test;
using namespace std::chrono_literals;

namespace {

long cpu_ticks(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  auto p = s.rfind(')');
  std::istringstream in(s.substr(p + 2));
  std::string field;
  long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && in >> field; ++i) {
    if (i == 14) utime = std::stol(field);
    if (i == 15) stime = std::stol(field);
  }
  return utime + stime;
}

std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

int connect_raw(std::uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

// Under ASan the gateway does not run with a hard limit of 64 descriptors (it exits 1
// before the listener backs off): the case runs against programs built without it. The
// asan tier runs these tests against the sanitized programs and says so with
// PUSHONCE_TEST_SANITIZED.
namespace {
bool programs_under_asan() {
#ifdef __SANITIZE_ADDRESS__
  return true;
#else
  const char* v = std::getenv("PUSHONCE_TEST_SANITIZED");
  return v && *v && std::string_view(v) != "0";
#endif
}
}  // namespace

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_gateway_limits_e2e {

TEST_CASE("gateway: out of descriptors the listener backs off, warns once, and recovers") {
  if (programs_under_asan()) {
    MESSAGE("skipped: the programs under test are built with ASan");
    return;
  }
  redis_server redis;
  auto port = free_port();
  // prlimit execs the gateway with a hard limit of 64 descriptors.
  process gw("prlimit", {"--nofile=64:64", program_path("pushonce-gateway"), "--redis", redis.url(),
                         "--namespace", "e2elimits", "--listen",
                         "127.0.0.1:" + std::to_string(port), "--threads", "1", "--dev-auth"});
  auto healthy = [&] {
    return http_request("127.0.0.1", port, "GET", "/healthz", {}, {}, 1s).status == 200;
  };
  REQUIRE(wait_until(healthy, 10s, 50ms));
  CHECK(gw.stderr_text().find("open files limit: 64") != std::string::npos);

  // 100 connections that send nothing: the gateway holds each (header deadline 30 s) and
  // runs out of descriptors; the rest wait in the listen backlog.
  std::vector<int> fds;
  for (int i = 0; i < 100; ++i)
    if (int fd = connect_raw(port); fd >= 0) fds.push_back(fd);
  CHECK(fds.size() == 100);
  wait_for(
      "the gateway meeting the limit (its accept warning)",
      [&] { return gw.stderr_text().find("listener: accept:") != std::string::npos; }, 5s);
  auto t0 = cpu_ticks(gw.pid());
  observe_quiet(2s, "the accept loop spinning on EMFILE");
  auto used = cpu_ticks(gw.pid()) - t0;
  CHECK(used < sysconf(_SC_CLK_TCK) / 2);  // a spinning accept loop burns ~2 s in 2 s
  auto log = gw.stderr_text();
  CHECK(count_of(log, "listener: accept:") == 1);
  CHECK(log.find("retrying every 50 ms") != std::string::npos);

  for (int fd : fds) ::close(fd);
  CHECK(wait_until(healthy, 10s, 50ms));
  CHECK(gw.stderr_text().find("listener: accepting again") != std::string::npos);
  CHECK(count_of(gw.stderr_text(), "listener: accept:") == 1);
  CHECK(gw.stop() == 0);
}

}  // namespace test_gateway_limits_e2e
