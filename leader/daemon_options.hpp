#pragma once
// The settings of `pushonce-leader run` (leader/main.cpp reads them from the command line):
// the lease and the duties it starts read them.

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "core/admission_token.hpp"
#include "core/retention.hpp"

namespace pushonce::leader {

struct daemon_options {
  std::string id;
  std::vector<std::string> queues{"default"};
  std::chrono::milliseconds lease{5000};
  std::chrono::milliseconds accept_timeout{0};  // 0: assignments do not expire
  std::chrono::milliseconds tick{1000};
  long long batch = 200;           // assignments (expiries) per script call: one bus message each
  long long opening_batch = 1000;  // pre-queued users drawn or moved per script call
  std::chrono::milliseconds presence_tick{1000};  // the abandonment sweep and gateway folding
  std::chrono::milliseconds gateway_grace{5000};  // --gateway-grace-ms: a new instance's
                                                  // time to beat first
  pushonce::retention retention;
  int wait_replicas = 0;  // --wait-replicas: the queue slot's writes replicated before the bus
  std::chrono::milliseconds wait_timeout{100};
  // Admission tokens (leader/admission_assigner.cpp): none = `data.admission` is null.
  std::shared_ptr<const admission::signer> admission_signer;
  std::string admission_issuer = "pushonce";
  std::chrono::seconds admission_ttl{600};
};

}  // namespace pushonce::leader
