#include "tests/support/redis_server.hpp"

#include <arpa/inet.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string_view>
#include <system_error>

#include "tests/support/process.hpp"
#include "tests/support/sync_redis.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/wait.hpp"

#ifndef PUSHONCE_REDIS_SERVER
#define PUSHONCE_REDIS_SERVER "redis-server"
#endif

namespace pushonce::test {
namespace {

using namespace std::chrono_literals;

// The process_id that the server on `port` reports, or -1 when it does not answer (yet).
long long server_pid(std::uint16_t port) {
  timeval tv{0, 200 * 1000};
  context_ptr c(redisConnectWithTimeout("127.0.0.1", port, tv));
  if (!c || c->err != 0) return -1;
  redisSetTimeout(c.get(), tv);
  reply_ptr pong(static_cast<redisReply*>(redisCommand(c.get(), "PING")));
  if (!pong || pong->type != REDIS_REPLY_STATUS || std::string_view(pong->str) != "PONG")
    return -1;  // e.g. -LOADING while the AOF is read
  reply_ptr info(static_cast<redisReply*>(redisCommand(c.get(), "INFO server")));
  if (!info || info->type != REDIS_REPLY_STRING) return -1;
  std::string_view text(info->str, info->len);
  auto at = text.find("process_id:");
  if (at == std::string_view::npos) return -1;
  return std::atoll(info->str + at + 11);
}

std::string tail(const std::string& text, std::size_t n = 2000) {
  return text.size() <= n ? text : text.substr(text.size() - n);
}

}  // namespace

namespace {
bool port_is_free(std::uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return ok;
}
}  // namespace

// Listening ports come from below the kernel's ephemeral range (32768-60999 by default):
// a port that bind(0) handed out is one the next outgoing connection of any process may
// take before the program under test binds it, and with tests running side by side (ctest
// -j2, hundreds of client connections each) that happened. A cluster node's bus port
// (P + 10000) stays below that range too.
constexpr int first_listen_port = 10000, listen_ports = 12000;

std::uint16_t pick_port(bool with_bus) {
  static std::mt19937 rng{std::random_device{}()};
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  for (int attempt = 0; attempt < 1000; ++attempt) {
    auto p = static_cast<std::uint16_t>(first_listen_port + rng() % listen_ports);
    if (port_is_free(p) && (!with_bus || port_is_free(static_cast<std::uint16_t>(p + 10000))))
      return p;
  }
  throw std::runtime_error(with_bus ? "no free port pair for a cluster node"
                                    : "no free port below the ephemeral range");
}

std::uint16_t free_cluster_port() {
  return pick_port(true);
}

std::uint16_t free_port() {
  return pick_port(false);
}

redis_server::redis_server(redis_server_options options)
    : options_(std::move(options)), dir_(std::make_unique<temp_dir>("pushonce-redis")) {
  start();
}

redis_server::~redis_server() {
  if (!process_ || !process_->running()) return;
  process_->kill(SIGCONT);  // in case it was paused
  process_->stop(5s);
}

std::string redis_server::url() const {
  return "redis://127.0.0.1:" + std::to_string(port_);
}

const std::string& redis_server::dir() const {
  return dir_->path();
}

bool redis_server::running() const {
  return process_ && process_->running();
}

std::string redis_server::log() const {
  return process_ ? process_->stdout_text() : "";
}

void redis_server::start() {
  const bool new_port = port_ == 0;
  std::string last_log;
  for (int attempt = 0; attempt < 5; ++attempt) {
    if (new_port) port_ = options_.cluster_bus ? free_cluster_port() : free_port();
    std::vector<std::string> args = {"--port",       std::to_string(port_),
                                     "--bind",       "127.0.0.1",
                                     "--dir",        dir_->path(),
                                     "--save",       "",
                                     "--daemonize",  "no",
                                     "--logfile",    "",
                                     "--loglevel",   "notice",
                                     "--appendonly", options_.appendonly ? "yes" : "no"};
    if (options_.appendonly) args.insert(args.end(), {"--appendfsync", "always"});
    // A replica's full sync starts at once: the default waits 5 s for more replicas to
    // share a diskless transfer, which every cluster, sentinel and replica set-up sat out.
    args.insert(args.end(), {"--repl-diskless-sync-delay", "0"});
    args.insert(args.end(), options_.extra_args.begin(), options_.extra_args.end());
    process_ = std::make_unique<process>(PUSHONCE_REDIS_SERVER, std::move(args), environment{},
                                         dir_->path());
    if (wait_ready(options_.ready_timeout)) return;
    process_->stop(5s);
    last_log = process_->stdout_text() + process_->stderr_text();
    if (!new_port) let_lapse(200ms, "the old server's hold on the port");
  }
  throw std::runtime_error("redis-server did not start on port " + std::to_string(port_) +
                           "; its last log:\n" + tail(last_log));
}

bool redis_server::wait_ready(std::chrono::milliseconds timeout) {
  bool ours = false;
  wait_until(
      [&] {
        if (!process_->running()) return true;  // e.g. the port was taken
        long long pid = server_pid(port_);
        ours = pid == process_->pid();
        return pid > 0;  // ours, or another server answers on this port
      },
      timeout, 10ms);
  return ours;
}

void redis_server::stop() {
  if (!process_ || !process_->running()) return;
  process_->kill(SIGCONT);  // a paused server cannot act on SIGTERM
  process_->stop(10s);
}

void redis_server::kill() {
  if (!process_) return;
  process_->kill(SIGKILL);
  process_->wait(10s);
}

void redis_server::pause() {
  if (process_) process_->kill(SIGSTOP);
}

void redis_server::resume() {
  if (process_) process_->kill(SIGCONT);
}

void redis_server::restart() {
  stop();
  start();
}

}  // namespace pushonce::test
