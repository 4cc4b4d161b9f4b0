#include "core/disconnect.hpp"

#include "core/names.hpp"
#include "core/queue_api.hpp"
#include "core/redis/connection.hpp"
#include "core/redis/failure_of.hpp"

namespace pushonce {

boost::asio::awaitable<outcome<lua::revoke_reply>> disconnect_user(
    std::shared_ptr<redis::connection> conn, keys k, std::string user, bool revoke,
    std::chrono::seconds lifetime, retention outbox) {
  if (!valid_name(user))
    co_return failure{errc::bad_request, "user must be 1-128 characters of [A-Za-z0-9._@-]"};
  if (revoke && (lifetime.count() < 1 || lifetime > max_revocation_lifetime))
    co_return failure{errc::bad_request, "the revocation's lifetime must be 1 s..365 days"};
  auto in = lua::revoke_for(k, user, revoke, lifetime);
  auto r = co_await lua::run_script(*conn, std::move(in));
  if (!r.ok()) co_return failure_of(r);
  auto parsed = lua::parse_revoke_reply(r.value);
  if (!parsed) co_return failure{errc::internal, "revoke.lua: unexpected reply"};
  if (revoke) {
    // A revoked user's admissions end too: their resources go back, their places under the
    // cap are free (docs/capacity.md). A failure here is reported: the revocation stands
    // and the release can be asked again (it is idempotent).
    queue_api q(conn, k, outbox);
    auto queues = co_await q.registered_queues();
    if (!queues) co_return queues.error();
    for (const auto& name : queues.value()) {
      auto live = co_await q.live_admissions(name, user);
      if (!live) co_return live.error();
      for (const auto& a : live.value()) {
        auto rel = co_await q.release_admission(name, a.id, "revoked");
        if (!rel && rel.error().code != errc::not_found) co_return rel.error();
      }
    }
  }
  co_return *parsed;
}

}  // namespace pushonce
