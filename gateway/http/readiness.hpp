#pragma once
// GET /readyz: whether a load balancer should send this gateway new connections. Ready
// means Redis answers and accepts writes (a tiny key written with a short TTL: OOM at
// maxmemory or MISCONF after failed saves make it 503 too, not only a failed PING), the
// subscribers hold their channels (on a Redis Cluster the sharded subscriber too: every user
// channel placed on a live node), and the gateway is not draining (SIGTERM turns it
// not-ready first; docs/protocol.md "Readiness and draining"). /healthz stays the liveness
// answer. No sockets here: the route gathers the inputs.

#include <optional>
#include <string>

namespace pushonce::gateway {

struct readiness_inputs {
  bool redis_ok = false;    // Redis answered the probe within the health connection's deadline
  bool writable = true;     // ... and accepted its write (false: OOM, MISCONF, READONLY, ...)
  std::string redis_error;  // why not, when !redis_ok or !writable ("" when unknown)
  bool subscribed = false;  // the subscriber is connected (channels re-subscribed)
  bool draining = false;    // SIGTERM received: sessions are about to be closed with 1001
  // Redis Cluster only: the sharded subscriber read the slot map and every user channel is
  // placed on a connected node. std::nullopt on a single Redis (and then not in the body).
  std::optional<bool> sharded;
  // Redis Cluster only: slot ranges without a master ("0-5460,..."; "" for none): their
  // keys are refused (CLUSTERDOWN) until a replica is promoted.
  std::optional<std::string> slots_without_master;
};

struct readiness_answer {
  unsigned status = 503;  // 200 ready, 503 not
  // {"ready":B,"redis":B,"subscribed":B,"draining":B[,"sharded":B]
  // [,"slots_without_master":"0-5460"]}; when not ready also
  // "reason":"..." (the first cause, e.g. "redis refuses writes: OOM command not allowed
  // ..."), and "writable":false when Redis answered but refused the write.
  std::string body;
};

readiness_answer judge_readiness(const readiness_inputs& in);

}  // namespace pushonce::gateway
