// The leader's part in admission tokens (docs/architecture.md "Admission tokens"): the
// leader is the one process that holds the signing key, and signs each assignment's token
// once, before assign.lua publishes it, so that every session and every resume replays the
// same frame with the same token (core/admission_plan.hpp says how).
#include <chrono>

#include "core/log.hpp"
#include "leader/leader_daemon.hpp"

namespace pushonce::leader {

namespace asio = boost::asio;

asio::awaitable<outcome<std::vector<assignment>>> leader_daemon::assign_signed(
    const std::string& queue, long long source) {
  if (!opts_.admission_signer) {
    auto r = co_await queues_.assign_batch(queue, source, lease_.token(),
                                           opts_.accept_timeout.count(), opts_.batch);
    co_return r;
  }
  // A plan goes stale when a user joins or leaves at the head, a resource is added or
  // released, or an expiry takes ids between the two calls: plan again, a few times.
  for (int attempt = 0; attempt < 20; ++attempt) {
    auto plan = co_await queues_.plan_assign(queue, opts_.batch);
    if (!plan) co_return plan.error();
    if (plan.value().idle()) co_return std::vector<assignment>{};
    const long long now_s = std::chrono::duration_cast<std::chrono::seconds>(
                                std::chrono::system_clock::now().time_since_epoch())
                                .count();
    std::vector<std::string> tokens;
    tokens.reserve(plan.value().pairs.size());
    for (std::size_t i = 0; i < plan.value().pairs.size(); ++i) {
      const auto& [user, resource] = plan.value().pairs[i];
      auto c = admission::claims_for(opts_.admission_issuer, user, queue, resource,
                                     admission::planned_id(plan.value(), i, source), now_s,
                                     opts_.admission_ttl);
      tokens.push_back(opts_.admission_signer->sign(c));
    }
    auto r =
        co_await queues_.assign_planned(queue, source, lease_.token(), opts_.accept_timeout.count(),
                                        opts_.batch, std::move(plan.value()), std::move(tokens));
    if (!r) co_return r.error();
    if (r.value()) co_return std::move(*r.value());
    log::debug("queue {}: the assignment plan went stale; planning again", queue);
  }
  co_return std::vector<assignment>{};
}

}  // namespace pushonce::leader
