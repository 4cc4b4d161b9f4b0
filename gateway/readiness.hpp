#pragma once
// GET /readyz: whether a load balancer should send this gateway new connections. Ready
// means Redis answers, the subscribers hold their channels (on a Redis Cluster the sharded
// subscriber too: every user channel placed on a live node), and the gateway is not draining
// (SIGTERM turns it not-ready first; docs/protocol.md "Readiness and draining"). /healthz
// stays the liveness answer. No sockets here: the route gathers the inputs.

#include <optional>
#include <string>

namespace pushonce::gateway {

struct readiness_inputs {
  bool redis_ok = false;    // PING answered within the health connection's deadline
  bool subscribed = false;  // the subscriber is connected (channels re-subscribed)
  bool draining = false;    // SIGTERM received: sessions are about to be closed with 1001
  // Redis Cluster only: the sharded subscriber read the slot map and every user channel is
  // placed on a connected node. std::nullopt on a single Redis (and then not in the body).
  std::optional<bool> sharded;
};

struct readiness_answer {
  unsigned status = 503;  // 200 ready, 503 not
  std::string body;       // {"ready":B,"redis":B,"subscribed":B,"draining":B[,"sharded":B]}
};

readiness_answer judge_readiness(const readiness_inputs& in);

}  // namespace pushonce::gateway
