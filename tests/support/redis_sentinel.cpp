#include "tests/support/redis_sentinel.hpp"

#include <hiredis/hiredis.h>

#include <algorithm>
#include <fstream>
#include <stdexcept>
#include <string_view>

#include "tests/support/redis_server.hpp"
#include "tests/support/sync_redis.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/wait.hpp"

#ifndef PUSHONCE_REDIS_SERVER
#define PUSHONCE_REDIS_SERVER "redis-server"
#endif

namespace pushonce::test {
namespace {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

// One command to 127.0.0.1:port with short timeouts (after AUTH when a password is given);
// nullptr when it cannot be sent.
reply_ptr ask(std::uint16_t port, const std::vector<std::string>& words,
              const std::string& password = {}) {
  timeval tv{0, 300 * 1000};
  context_ptr c(redisConnectWithTimeout("127.0.0.1", port, tv));
  if (!c || c->err != 0) return nullptr;
  redisSetTimeout(c.get(), tv);
  if (!password.empty()) {
    reply_ptr ok(static_cast<redisReply*>(redisCommand(c.get(), "AUTH %s", password.c_str())));
    if (!ok || ok->type == REDIS_REPLY_ERROR) return nullptr;
  }
  std::vector<const char*> argv;
  std::vector<std::size_t> lens;
  for (const auto& w : words) {
    argv.push_back(w.data());
    lens.push_back(w.size());
  }
  return reply_ptr(static_cast<redisReply*>(
      redisCommandArgv(c.get(), static_cast<int>(argv.size()), argv.data(), lens.data())));
}

// The port a sentinel names as master (0 when it does not answer or knows none).
std::uint16_t named_master(std::uint16_t sentinel, const std::string& name) {
  auto r = ask(sentinel, {"SENTINEL", "get-master-addr-by-name", name});
  if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2) return 0;
  return static_cast<std::uint16_t>(std::atoi(r->element[1]->str));
}

// A field of SENTINEL MASTER NAME (a flat name/value array), "" when absent.
std::string master_field(std::uint16_t sentinel, const std::string& name, std::string_view field) {
  auto r = ask(sentinel, {"SENTINEL", "MASTER", name});
  if (!r || r->type != REDIS_REPLY_ARRAY) return {};
  for (std::size_t i = 0; i + 1 < r->elements; i += 2)
    if (std::string_view(r->element[i]->str, r->element[i]->len) == field)
      return std::string(r->element[i + 1]->str, r->element[i + 1]->len);
  return {};
}

bool role_is_master(std::uint16_t port, const std::string& password) {
  auto r = ask(port, {"ROLE"}, password);
  return r && r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
         std::string_view(r->element[0]->str) == "master";
}

bool replica_in_sync(std::uint16_t port, const std::string& password) {
  auto r = ask(port, {"INFO", "replication"}, password);
  return r && r->type == REDIS_REPLY_STRING &&
         std::string_view(r->str, r->len).find("master_link_status:up") != std::string_view::npos;
}

}  // namespace

redis_sentinel::redis_sentinel(std::string master_name, std::string password)
    : master_name_(std::move(master_name)), password_(std::move(password)) {
  for (int i = 0; i < 3; ++i) servers_.push_back(std::make_unique<redis_server>());
  auto master = servers_[0]->port();
  // The password is set while every server is still a master of its own (redis_server's
  // readiness check does not log in), masterauth first; only then do the replicas follow the
  // master: no handshake can meet a password half set.
  for (std::size_t i = servers_.size(); !password_.empty() && i-- > 0;) {
    auto port = servers_[i]->port();
    auto a = ask(port, {"CONFIG", "SET", "masterauth", password_});
    auto b = ask(port, {"CONFIG", "SET", "requirepass", password_});
    if (!a || !b || a->type == REDIS_REPLY_ERROR || b->type == REDIS_REPLY_ERROR)
      throw std::runtime_error("cannot set the password of 127.0.0.1:" + std::to_string(port));
  }
  for (std::size_t i = 1; i < servers_.size(); ++i) {
    auto r =
        ask(servers_[i]->port(), {"REPLICAOF", "127.0.0.1", std::to_string(master)}, password_);
    if (!r || r->type == REDIS_REPLY_ERROR)
      throw std::runtime_error("cannot make 127.0.0.1:" + std::to_string(servers_[i]->port()) +
                               " a replica");
  }
  for (std::size_t i = 0; i < 3; ++i) start_sentinel(i, master);

  auto next_kick = clock_type::now() + 10s;
  std::string why;
  auto set_up = [&] {
    if (ready(master, why)) return true;
    // A replica still out of sync after 10 s (a loaded machine) is made to start over:
    // REPLICAOF of the master it already follows would be a no-op, so it first stops.
    if (clock_type::now() > next_kick) {
      next_kick = clock_type::now() + 10s;
      for (std::size_t i = 1; i < servers_.size(); ++i)
        if (!replica_in_sync(servers_[i]->port(), password_)) {
          ask(servers_[i]->port(), {"REPLICAOF", "NO", "ONE"}, password_);
          ask(servers_[i]->port(), {"REPLICAOF", "127.0.0.1", std::to_string(master)}, password_);
        }
    }
    return false;
  };
  if (!wait_until(set_up, 30s, 50ms))
    throw std::runtime_error("redis sentinel setup not ready in 30 s: " + why + "\n" + logs());
}

redis_sentinel::~redis_sentinel() {
  for (auto& s : sentinels_)
    if (s && s->running()) s->stop(5s);
}

void redis_sentinel::start_sentinel(std::size_t i, std::uint16_t master) {
  auto dir = std::make_unique<temp_dir>("pushonce-sentinel");
  auto port = free_port();
  auto conf = dir->file("sentinel.conf");
  {
    std::ofstream out(conf);
    out << "port " << port << "\n"
        << "bind 127.0.0.1\n"
        << "dir " << dir->path() << "\n"
        << "sentinel monitor " << master_name_ << " 127.0.0.1 " << master << " 2\n"
        << "sentinel down-after-milliseconds " << master_name_ << " 1000\n"
        << "sentinel failover-timeout " << master_name_ << " 3000\n";
    if (!password_.empty())
      out << "sentinel auth-pass " << master_name_ << " " << password_ << "\n";
    if (!out) throw std::runtime_error("cannot write " + conf);
  }
  auto p = std::make_unique<process>(
      PUSHONCE_REDIS_SERVER,
      std::vector<std::string>{conf, "--sentinel", "--daemonize", "no", "--logfile", ""},
      environment{}, dir->path());
  if (sentinel_ports_.size() <= i) sentinel_ports_.resize(i + 1);
  sentinel_ports_[i] = port;
  sentinel_dirs_.push_back(std::move(dir));
  sentinels_.push_back(std::move(p));
}

// Every replica in sync; every sentinel names the master and knows 2 replicas and the 2
// other sentinels (found through the master's __sentinel__:hello channel).
bool redis_sentinel::ready(std::uint16_t master, std::string& why) const {
  for (std::size_t i = 1; i < servers_.size(); ++i)
    if (!replica_in_sync(servers_[i]->port(), password_)) {
      why = "replica " + std::to_string(servers_[i]->port()) + " not in sync";
      return false;
    }
  for (std::size_t i = 0; i < sentinels_.size(); ++i) {
    auto port = sentinel_ports_[i];
    if (!sentinels_[i]->running()) {
      why = "sentinel " + std::to_string(port) + " exited";
      throw std::runtime_error(why + "\n" + logs());
    }
    if (named_master(port, master_name_) != master ||
        master_field(port, master_name_, "num-slaves") != "2" ||
        master_field(port, master_name_, "num-other-sentinels") != "2") {
      why = "sentinel " + std::to_string(port) + " does not know the whole setup yet";
      return false;
    }
  }
  return true;
}

std::string redis_sentinel::url() const {
  std::string out = "redis+sentinel://";
  if (!password_.empty()) out += ":" + password_ + "@";
  for (std::size_t i = 0; i < sentinel_ports_.size(); ++i)
    out += (i ? ",127.0.0.1:" : "127.0.0.1:") + std::to_string(sentinel_ports_[i]);
  return out + "/" + master_name_;
}

redis_server& redis_sentinel::server_on(std::uint16_t port) {
  for (auto& s : servers_)
    if (s->port() == port) return *s;
  throw std::out_of_range("no server on port " + std::to_string(port));
}

std::uint16_t redis_sentinel::master_port() const {
  for (std::size_t i = 0; i < sentinels_.size(); ++i)
    if (sentinels_[i]->running())
      if (auto p = named_master(sentinel_ports_[i], master_name_)) return p;
  return 0;
}

std::uint16_t redis_sentinel::wait_new_master(std::uint16_t old_port,
                                              std::chrono::milliseconds timeout) {
  std::uint16_t agreed = 0;
  bool promoted = wait_until(
      [&] {
        agreed = 0;
        bool all = true;
        for (std::size_t i = 0; i < sentinels_.size() && all; ++i) {
          if (!sentinels_[i]->running()) continue;
          auto p = named_master(sentinel_ports_[i], master_name_);
          all = p != 0 && p != old_port && (agreed == 0 || p == agreed);
          agreed = p;
        }
        return all && agreed != 0 && role_is_master(agreed, password_);
      },
      timeout);
  return promoted ? agreed : 0;
}

environment redis_sentinel::program_env(const std::string& ns, const environment& more) const {
  environment env{{"PUSHONCE_REDIS_SENTINEL", url()},
                  {"PUSHONCE_REDIS", std::nullopt},
                  {"PUSHONCE_REDIS_CLUSTER", std::nullopt},
                  {"PUSHONCE_NAMESPACE", ns},
                  {"PUSHONCE_LOG_LEVEL", "info"}};
  return merged(std::move(env), more);
}

std::string redis_sentinel::logs() const {
  std::string out;
  for (const auto& s : servers_) {
    auto text = s->log();
    if (text.size() > 2000) text = text.substr(text.size() - 2000);
    out += "--- redis " + std::to_string(s->port()) + "\n" + text;
  }
  for (std::size_t i = 0; i < sentinels_.size(); ++i) {
    auto text = sentinels_[i]->stdout_text();
    if (text.size() > 3000) text = text.substr(text.size() - 3000);
    out += "--- sentinel " + std::to_string(sentinel_ports_[i]) + "\n" + text;
  }
  return out;
}

}  // namespace pushonce::test
