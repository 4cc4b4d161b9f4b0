#pragma once
// GET /readyz: whether a load balancer should send this gateway new connections. Ready
// means Redis answers, the subscriber holds its channels, and the gateway is not draining
// (SIGTERM turns it not-ready first; docs/protocol.md "Readiness and draining"). /healthz
// stays the liveness answer. No sockets here: the route gathers the inputs.

#include <string>

namespace pushonce::gateway {

struct readiness_inputs {
  bool redis_ok = false;    // PING answered within the health connection's deadline
  bool subscribed = false;  // the subscriber is connected (channels re-subscribed)
  bool draining = false;    // SIGTERM received: sessions are about to be closed with 1001
};

struct readiness_answer {
  unsigned status = 503;  // 200 ready, 503 not
  std::string body;       // {"ready":B,"redis":B,"subscribed":B,"draining":B}
};

readiness_answer judge_readiness(const readiness_inputs& in);

}  // namespace pushonce::gateway
