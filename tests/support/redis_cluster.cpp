#include "tests/support/redis_cluster.hpp"

#include <algorithm>
#include <array>
#include <stdexcept>
#include <string_view>

#include "tests/support/process.hpp"
#include "tests/support/sync_redis.hpp"
#include "tests/support/tls_certs.hpp"
#include "tests/support/wait.hpp"

namespace pushonce::test {
namespace {

using namespace std::chrono_literals;

std::string text_of(const redisReply* r) {
  if (r == nullptr) return {};
  if (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS ||
      r->type == REDIS_REPLY_ERROR)
    return {r->str, r->len};
  return {};
}

// The master port serving `slot` in a CLUSTER SLOTS reply; 0 when no range holds it.
std::uint16_t owner_in(const redisReply* slots, unsigned slot) {
  if (slots == nullptr || slots->type != REDIS_REPLY_ARRAY) return 0;
  for (std::size_t i = 0; i < slots->elements; ++i) {
    const redisReply* range = slots->element[i];
    if (range->elements < 3) continue;
    auto first = static_cast<unsigned>(range->element[0]->integer);
    auto last = static_cast<unsigned>(range->element[1]->integer);
    if (slot < first || slot > last) continue;
    return static_cast<std::uint16_t>(range->element[2]->element[1]->integer);
  }
  return 0;
}

// {first, last, master port} of every range of a CLUSTER SLOTS reply, sorted.
std::vector<unsigned> ranges_of(const redisReply* slots) {
  std::vector<std::array<unsigned, 3>> ranges;
  for (std::size_t i = 0; slots != nullptr && i < slots->elements; ++i) {
    const redisReply* range = slots->element[i];
    if (range->elements < 3) continue;
    ranges.push_back({static_cast<unsigned>(range->element[0]->integer),
                      static_cast<unsigned>(range->element[1]->integer),
                      static_cast<unsigned>(range->element[2]->element[1]->integer)});
  }
  std::sort(ranges.begin(), ranges.end());
  std::vector<unsigned> out;
  for (auto& r : ranges) out.insert(out.end(), r.begin(), r.end());
  return out;
}

bool cluster_ok(sync_redis& r) {
  return text_of(r.cmd({"CLUSTER", "INFO"}).get()).find("cluster_state:ok") != std::string::npos;
}

}  // namespace

redis_cluster::redis_cluster(redis_cluster_options options) : options_(options) {
  const int total = options_.masters * (1 + options_.replicas);
  for (int i = 0; i < total; ++i) {
    redis_server_options so;
    so.cluster_bus = true;
    so.extra_args = {"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                     "--cluster-node-timeout", std::to_string(options_.node_timeout.count()),
                     // A replica promoted as soon as its master is seen failed (no data-age
                     // limit), as in a test nothing else decides.
                     "--cluster-replica-validity-factor", "0"};
    if (options_.tls) {
      // The bus listens on the TLS port + 10000 (tls-cluster): that one must be free too.
      auto tls_port = free_cluster_port();
      tls_ports_.push_back(tls_port);
      auto tls_args = options_.tls->redis_args(tls_port, options_.tls_auth_clients);
      tls_args.insert(tls_args.end(), {"--tls-cluster", "yes", "--tls-replication", "yes"});
      so.extra_args.insert(so.extra_args.end(), tls_args.begin(), tls_args.end());
    }
    nodes_.push_back(std::make_unique<redis_server>(std::move(so)));
  }
  std::vector<std::string> args = {"--cluster", "create"};
  for (auto& n : nodes_) args.push_back("127.0.0.1:" + std::to_string(n->port()));
  args.insert(args.end(),
              {"--cluster-replicas", std::to_string(options_.replicas), "--cluster-yes"});
  auto created = run_capture("redis-cli", args, {}, 60s);
  if (created.exit_code != 0)
    throw std::runtime_error("redis-cli --cluster create failed: " + created.out + created.err);
  if (!wait_ok(options_.ready_timeout))
    throw std::runtime_error("the cluster did not become ok in time");
  // Every replica has finished its first sync (a failover test needs a replica to promote).
  bool synced = wait_until(
      [&] {
        for (auto& n : nodes_) {
          sync_redis r(n->port());
          auto info = r.text({"INFO", "replication"});
          if (info.find("role:slave") != std::string::npos &&
              info.find("master_link_status:up") == std::string::npos)
            return false;
        }
        return true;
      },
      options_.ready_timeout);
  if (!synced) throw std::runtime_error("the cluster's replicas did not sync in time");
}

redis_cluster::~redis_cluster() = default;

redis_server& redis_cluster::node_on(std::uint16_t port) {
  for (auto& n : nodes_)
    if (n->port() == port) return *n;
  throw std::out_of_range("no cluster node on port " + std::to_string(port));
}

std::string redis_cluster::url() const {
  std::string out = "redis://";
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (i != 0) out += ',';
    out += "127.0.0.1:" + std::to_string(nodes_[i]->port());
  }
  return out;
}

std::string redis_cluster::tls_url() const {
  if (tls_ports_.empty()) throw std::logic_error("tls_url: the cluster has no TLS ports");
  std::string out = "rediss://";
  for (std::size_t i = 0; i < tls_ports_.size(); ++i) {
    if (i != 0) out += ',';
    out += "127.0.0.1:" + std::to_string(tls_ports_[i]);
  }
  return out;
}

std::uint16_t redis_cluster::any_running_port() {
  for (auto& n : nodes_)
    if (n->running()) return n->port();
  throw std::runtime_error("no cluster node is running");
}

unsigned redis_cluster::slot_of(const std::string& key) {
  sync_redis r(any_running_port());
  return static_cast<unsigned>(r.integer({"CLUSTER", "KEYSLOT", key}));
}

std::uint16_t redis_cluster::master_of(unsigned slot) {
  sync_redis r(any_running_port());
  auto slots = r.cmd({"CLUSTER", "SLOTS"});
  return owner_in(slots.get(), slot);
}

std::vector<std::uint16_t> redis_cluster::masters() {
  sync_redis r(any_running_port());
  auto slots = r.cmd({"CLUSTER", "SLOTS"});
  std::vector<std::uint16_t> out;
  for (std::size_t i = 0; i < slots->elements; ++i) {
    auto port = static_cast<std::uint16_t>(slots->element[i]->element[2]->element[1]->integer);
    if (std::find(out.begin(), out.end(), port) == out.end()) out.push_back(port);
  }
  return out;
}

std::string redis_cluster::node_id(std::uint16_t port) {
  sync_redis r(port);
  return r.text({"CLUSTER", "MYID"});
}

void redis_cluster::begin_move(unsigned slot, std::uint16_t to,
                               const std::vector<std::string>& keys) {
  std::uint16_t from = master_of(slot);
  if (from == 0 || from == to) throw std::runtime_error("begin_move: slot already there");
  const std::string s = std::to_string(slot), from_id = node_id(from), to_id = node_id(to);
  sync_redis target(to), source(from);
  target.cmd({"CLUSTER", "SETSLOT", s, "IMPORTING", from_id});
  source.cmd({"CLUSTER", "SETSLOT", s, "MIGRATING", to_id});
  for (const auto& k : keys) {
    auto r = source.cmd({"MIGRATE", "127.0.0.1", std::to_string(to), k, "0", "5000"});
    if (r->type == REDIS_REPLY_ERROR) throw std::runtime_error("MIGRATE: " + text_of(r.get()));
  }
}

void redis_cluster::move_slot(unsigned slot, std::uint16_t to) {
  std::uint16_t from = master_of(slot);
  if (from == 0) throw std::runtime_error("move_slot: nobody serves the slot");
  if (from == to) return;
  const std::string s = std::to_string(slot), from_id = node_id(from), to_id = node_id(to);
  {
    sync_redis target(to), source(from);
    target.cmd({"CLUSTER", "SETSLOT", s, "IMPORTING", from_id});
    source.cmd({"CLUSTER", "SETSLOT", s, "MIGRATING", to_id});
    for (;;) {
      auto keys = source.cmd({"CLUSTER", "GETKEYSINSLOT", s, "100"});
      if (keys->type != REDIS_REPLY_ARRAY || keys->elements == 0) break;
      std::vector<std::string> words = {"MIGRATE", "127.0.0.1", std::to_string(to), "", "0",
                                        "5000",    "KEYS"};
      for (std::size_t i = 0; i < keys->elements; ++i) words.push_back(text_of(keys->element[i]));
      auto r = source.cmd(words);
      if (r->type == REDIS_REPLY_ERROR) throw std::runtime_error("MIGRATE: " + text_of(r.get()));
    }
    // The new owner first, then the old one, then every other master (redis-cli's order).
    target.cmd({"CLUSTER", "SETSLOT", s, "NODE", to_id});
    source.cmd({"CLUSTER", "SETSLOT", s, "NODE", to_id});
  }
  for (auto port : masters()) {
    if (port == to || port == from) continue;
    sync_redis other(port);
    other.cmd({"CLUSTER", "SETSLOT", s, "NODE", to_id});
  }
  if (!wait_ok(options_.ready_timeout)) throw std::runtime_error("move_slot: cluster not ok");
}

std::vector<unsigned> redis_cluster::slots_of(std::uint16_t port) {
  sync_redis r(any_running_port());
  auto slots = r.cmd({"CLUSTER", "SLOTS"});
  std::vector<unsigned> out;
  for (std::size_t i = 0; i < slots->elements; ++i) {
    auto range = slots->element[i];
    if (range->element[2]->element[1]->integer != port) continue;
    for (auto s = range->element[0]->integer; s <= range->element[1]->integer; ++s)
      out.push_back(static_cast<unsigned>(s));
  }
  std::sort(out.begin(), out.end());
  return out;
}

void redis_cluster::reshard_with_cli(std::uint16_t from, std::uint16_t to, unsigned count) {
  std::vector<std::string> args = {
      "--cluster",      "reshard",         "127.0.0.1:" + std::to_string(from),
      "--cluster-from", node_id(from),     "--cluster-to",
      node_id(to),      "--cluster-slots", std::to_string(count),
      "--cluster-yes"};
  // redis-cli refuses to reshard while the nodes disagree about the configuration (as they
  // may for a moment after a failover); wait until its own check passes.
  const std::string entry = "127.0.0.1:" + std::to_string(from);
  run_result check;
  wait_until(
      [&] {
        check = run_capture("redis-cli", {"--cluster", "check", entry}, {}, 30s);
        return check.exit_code == 0;
      },
      30s, 500ms);
  if (check.exit_code != 0)
    throw std::runtime_error("redis-cli --cluster check failed: " + check.out + check.err);
  auto done = run_capture("redis-cli", args, {}, 120s);
  if (done.exit_code != 0)
    throw std::runtime_error("redis-cli --cluster reshard failed: " + done.out + done.err);
  if (!wait_ok(options_.ready_timeout)) throw std::runtime_error("reshard: cluster not ok");
}

environment redis_cluster::program_env(const std::string& ns, const environment& more) const {
  environment env{{"PUSHONCE_REDIS_CLUSTER", url()},
                  {"PUSHONCE_REDIS", std::nullopt},
                  {"PUSHONCE_NAMESPACE", ns},
                  {"PUSHONCE_LOG_LEVEL", "info"}};
  return merged(std::move(env), more);
}

long long redis_cluster::wait_replicated(const std::string& key,
                                         std::chrono::milliseconds timeout) {
  // The marker keeps `key`'s hash tag; a key without one becomes the marker's tag.
  const unsigned slot = slot_of(key);
  std::string marker = key + ":wait-marker";
  if (slot_of(marker) != slot) marker = "{" + key + "}:wait-marker";
  sync_redis r(master_of(slot));
  if (r.text({"SET", marker, "1", "PX", "60000"}) != "OK")
    throw std::runtime_error("wait_replicated: SET " + marker + " failed");
  return r.integer({"WAIT", "1", std::to_string(timeout.count())});
}

std::uint16_t redis_cluster::fail_master_of(unsigned slot) {
  std::uint16_t old = master_of(slot);
  node_on(old).kill();
  std::uint16_t now = 0;
  bool moved = wait_until(
      [&] {
        now = master_of(slot);
        return now != 0 && now != old;
      },
      options_.ready_timeout, 50ms);
  if (!moved || !wait_ok(options_.ready_timeout))
    throw std::runtime_error("no replica took over slot " + std::to_string(slot));
  return now;
}

bool redis_cluster::wait_ok(std::chrono::milliseconds timeout) {
  return wait_until(
      [&] {
        std::vector<unsigned> owners;
        for (auto& n : nodes_) {
          if (!n->running()) continue;
          try {
            sync_redis r(n->port());
            if (!cluster_ok(r)) return false;
            auto slots = r.cmd({"CLUSTER", "SLOTS"});
            std::vector<unsigned> mine = ranges_of(slots.get());
            unsigned covered = 0;
            for (std::size_t i = 0; i + 2 < mine.size(); i += 3) {
              covered += mine[i + 1] - mine[i] + 1;
              if (!node_on(static_cast<std::uint16_t>(mine[i + 2])).running()) return false;
            }
            if (covered != 16384) return false;
            if (owners.empty())
              owners = mine;
            else if (owners != mine)
              return false;
          } catch (const std::exception&) {
            return false;
          }
        }
        return !owners.empty();
      },
      timeout, 50ms);
}

}  // namespace pushonce::test
