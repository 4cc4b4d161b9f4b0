#pragma once
// One assign.lua batch for leader/assigner. Without an admission signer: assign.lua as is.
// With one: plan, sign, assign (leader/admission_assigner.cpp says how).

#include <boost/asio/awaitable.hpp>
#include <boost/asio/thread_pool.hpp>
#include <string>
#include <vector>

#include "core/admission_plan.hpp"
#include "core/queue_api.hpp"
#include "leader/duty_context.hpp"

namespace pushonce::leader {

class admission_assigner {
 public:
  admission_assigner(duty_context ctx, queue_api& queues) : ctx_(std::move(ctx)), queues_(queues) {}

  /// One assign.lua batch of `queue` (its source index `source`) under the current token.
  boost::asio::awaitable<outcome<std::vector<assignment>>> assign(const std::string& queue,
                                                                  long long source);

 private:
  /// The tokens of a plan's pairs, signed on signing_ (one thread: the signer is used by one
  /// thread at a time) while this thread goes on with Redis.
  boost::asio::awaitable<std::vector<std::string>> sign_plan(const std::string& queue,
                                                             long long source,
                                                             admission::assign_plan plan);

  duty_context ctx_;
  queue_api& queues_;                    // the daemon's
  boost::asio::thread_pool signing_{1};  // admission tokens
};

}  // namespace pushonce::leader
