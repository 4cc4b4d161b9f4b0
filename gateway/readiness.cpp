#include "gateway/readiness.hpp"

#include <fmt/format.h>

namespace pushonce::gateway {

readiness_answer judge_readiness(const readiness_inputs& in) {
  bool ready = in.redis_ok && in.subscribed && !in.draining;
  return {ready ? 200u : 503u,
          fmt::format(R"({{"ready":{},"redis":{},"subscribed":{},"draining":{}}})", ready,
                      in.redis_ok, in.subscribed, in.draining)};
}

}  // namespace pushonce::gateway
