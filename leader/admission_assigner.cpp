// The leader's part in admission tokens (docs/architecture.md "Admission tokens"): the
// leader is the one process that holds the signing key, and signs each assignment's token
// once, before assign.lua publishes it, so that every session and every resume replays the
// same frame with the same token (core/admission_plan.hpp says how).
//
// One plan covers up to four batches; it is cut into assign.lua calls of a batch each, and
// while Redis runs one call the signing thread signs the next call's tokens.
#include "leader/admission_assigner.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>

#include "core/log.hpp"

namespace pushonce::leader {

namespace asio = boost::asio;

asio::awaitable<std::vector<std::string>> admission_assigner::sign_plan(
    const std::string& queue, long long source, admission::assign_plan plan) {
  const long long now_s = std::chrono::duration_cast<std::chrono::seconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count();
  std::vector<admission::claims> claims;
  claims.reserve(plan.pairs.size());
  for (std::size_t i = 0; i < plan.pairs.size(); ++i)
    claims.push_back(admission::claims_for(
        ctx_.opts.admission_issuer, plan.pairs[i].first, queue, plan.pairs[i].second,
        admission::planned_id(plan, i, source), now_s, ctx_.opts.admission_ttl));
  auto work = [signer = ctx_.opts.admission_signer,
               claims = std::move(claims)]() -> asio::awaitable<std::vector<std::string>> {
    std::vector<std::string> tokens;
    tokens.reserve(claims.size());
    for (const auto& c : claims) tokens.push_back(signer->sign(c));
    co_return tokens;
  };
  auto tokens =
      co_await asio::co_spawn(signing_.get_executor(), std::move(work), asio::use_awaitable);
  co_return tokens;
}

asio::awaitable<outcome<std::vector<assignment>>> admission_assigner::assign(
    const std::string& queue, long long source) {
  using namespace asio::experimental::awaitable_operators;
  if (!ctx_.opts.admission_signer) {
    auto r = co_await queues_.assign_batch(queue, source, ctx_.token(),
                                           ctx_.opts.accept_timeout.count(), ctx_.opts.batch);
    co_return r;
  }
  const auto batch = static_cast<std::size_t>(ctx_.opts.batch);
  std::vector<assignment> out;
  // A plan goes stale when a user joins or leaves at the head, a resource is added or
  // released, or an expiry takes ids between the plan and its call: plan again, a few times.
  for (int attempt = 0; attempt < 20; ++attempt) {
    auto plan = co_await queues_.plan_assign(queue, std::min<long long>(1000, ctx_.opts.batch * 4));
    if (!plan) co_return plan.error();
    if (plan.value().idle()) co_return out;
    if (plan.value().stale > 0) {  // assign.lua's own view: one batch, its stale heads dropped
      plan = co_await queues_.plan_assign(queue, ctx_.opts.batch);
      if (!plan) co_return plan.error();
    }
    auto parts = admission::split_plan(plan.value(), batch);
    auto tokens = co_await sign_plan(queue, source, parts.front());
    bool stale = false;
    for (std::size_t k = 0; k < parts.size(); ++k) {
      auto call =
          queues_.assign_planned(queue, source, ctx_.token(), ctx_.opts.accept_timeout.count(),
                                 ctx_.opts.batch, parts[k], std::move(tokens));
      outcome<std::optional<std::vector<assignment>>> r = std::optional<std::vector<assignment>>{};
      if (k + 1 < parts.size()) {
        auto next = sign_plan(queue, source, parts[k + 1]);
        auto both = co_await (std::move(call) && std::move(next));
        r = std::move(std::get<0>(both));
        tokens = std::move(std::get<1>(both));
      } else {
        r = co_await std::move(call);
      }
      if (!r) {
        if (out.empty()) co_return r.error();
        co_return out;  // what was assigned is reported; the failure comes back next call
      }
      if (!r.value()) {
        log::debug("queue {}: the assignment plan went stale; planning again", queue);
        stale = true;
        break;
      }
      const bool short_call = r.value()->size() < parts[k].pairs.size();
      for (auto& a : *r.value()) out.push_back(std::move(a));
      // Fewer than planned without "stale": the script chose to assign nothing (e.g. the
      // queue is paused). Nothing to plan again for.
      if (short_call) co_return out;
    }
    if (!stale || !out.empty()) co_return out;
  }
  co_return out;
}

}  // namespace pushonce::leader
