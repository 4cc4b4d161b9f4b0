#pragma once
// The queue and resource operations (docs/protocol.md admin commands, gateway ops), each one
// Lua script run atomically in the queue's slot. Names are validated before Redis is asked.

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/admission_plan.hpp"
#include "core/id_floor.hpp"
#include "core/keys.hpp"
#include "core/lua/accept.hpp"
#include "core/lua/assign.hpp"
#include "core/lua/capacity.hpp"
#include "core/lua/positions.hpp"
#include "core/lua/resource.hpp"
#include "core/lua/settings.hpp"
#include "core/outcome.hpp"
#include "core/redis/connection.hpp"
#include "core/retention.hpp"

namespace pushonce {

struct join_result {
  long long position = 0;  // 0: pre-queued (opens_at says until when)
  long long ticket = 0;
  long long seq = 0;  // the queue event the position is true at (docs/data-model.md)
  std::optional<long long> opens_at = std::nullopt;  // pre-queued: the opening time (ms)
};
/// Where one user stands (standing.lua): waiting, pre-queued or neither.
struct queue_standing {
  long long seq = 0;
  long long position = 0;  // 0: not waiting
  long long ticket = 0;
  bool prequeued = false;
  std::optional<long long> opens_at = std::nullopt;  // pre-queued, in the pre-queue state
};
struct queue_listing {
  long long length = 0;
  std::vector<std::string> users;
};
struct resource_info {
  std::string id;
  bool assigned = false;
  std::string user;       // when assigned
  std::string meta_json;  // "null" when none
};

/// A proof-of-work solution the gateway verified (core/pow_challenge): join.lua marks it
/// used (NS:{q:Q}:pow:TOKEN for ttl_ms) and refuses it a second time (bad_request).
struct pow_use {
  std::string token;
  long long ttl_ms = 0;
};

class queue_api {
 public:
  queue_api(std::shared_ptr<redis::connection> conn, keys k, retention r = {});

  /// Only a registered queue can be joined (failure not_found otherwise; nothing written).
  boost::asio::awaitable<outcome<join_result>> join(std::string queue, std::string user,
                                                    std::optional<pow_use> pow = std::nullopt);
  /// `user` joined without a session (the admin CLI): its absence counts from now unless it
  /// has a session open (presence_joined.lua; abandonment, docs/protocol.md).
  boost::asio::awaitable<outcome<none>> joined_without_session(std::string user);
  /// Marks queues as run by a leader (NS:{q:Q}:registered, with the leader's accept timeout,
  /// and the set NS:queues), so that users can join them.
  boost::asio::awaitable<outcome<none>> register_queues(std::vector<std::string> queues,
                                                        long long accept_timeout_ms = 0);
  /// Reads or changes a queue's settings (lua/settings.lua); not_found for a queue no
  /// leader has registered.
  boost::asio::awaitable<outcome<lua::settings_reply>> settings(lua::settings_call c);
  /// Every queue a leader has registered (NS:queues), sorted.
  boost::asio::awaitable<outcome<std::vector<std::string>>> registered_queues();
  boost::asio::awaitable<outcome<none>> leave(std::string queue, std::string user);
  boost::asio::awaitable<outcome<long long>> position(std::string queue, std::string user);
  /// Waiting or pre-queued, read atomically (not_queued is not a failure here).
  boost::asio::awaitable<outcome<queue_standing>> standing(std::string queue, std::string user);
  /// Positions and tickets of `users` with the event sequence they are true at, in one call.
  boost::asio::awaitable<outcome<queue_positions>> positions(std::string queue,
                                                             std::vector<std::string> users);
  /// `limit` users from position `offset` + 1 on (a page), and the queue's length.
  boost::asio::awaitable<outcome<queue_listing>> list(std::string queue, long long limit,
                                                      long long offset = 0);

  /// meta_json: validated JSON text, or empty for none.
  boost::asio::awaitable<outcome<std::vector<std::string>>> add_resources(
      std::string queue, std::vector<std::string> ids, std::string meta_json);
  /// `resource release ID`: the same act as release_admission, by resource id (a pass's
  /// name too); the holder gets an `expired` message (reason "released").
  boost::asio::awaitable<outcome<none>> release_resource(std::string queue, std::string id);
  /// Releases a live admission (idempotent: an ended one answers its state); the holder gets
  /// an `expired` message with `reason` ("released" or "revoked"). not_found: no record.
  boost::asio::awaitable<outcome<lua::release_reply>> release_admission(
      std::string queue, std::string id, std::string reason = "released");
  /// Renews a live admission's lease (at: the time of the check that renews; none: now).
  /// Failure expired / released (errc_expired, errc_released) for an ended one.
  boost::asio::awaitable<outcome<admission::record>> renew_admission(
      std::string queue, std::string id, std::optional<long long> at_ms = std::nullopt);
  /// The queue's live admissions (one user's with `user` not empty), sorted by user.
  boost::asio::awaitable<outcome<std::vector<lua::live_admission>>> live_admissions(
      std::string queue, std::string user = {});
  /// ms until the queue's rate next allows an assignment (0: now), or -1: nothing to wait for.
  boost::asio::awaitable<outcome<long long>> next_due_ms(std::string queue);
  boost::asio::awaitable<outcome<none>> remove_resource(std::string queue, std::string id);
  boost::asio::awaitable<outcome<std::vector<resource_info>>> list_resources(std::string queue);
  /// Counts of free and assigned resources.
  boost::asio::awaitable<outcome<std::pair<long long, long long>>> resource_counts(
      std::string queue);

  /// The user takes its assignment (id "" = whichever it holds): its id, resource and lease
  /// end; failure not_found when it holds none (or it expired).
  boost::asio::awaitable<outcome<lua::accept_reply>> accept(std::string queue, std::string user,
                                                            std::string id);
  /// Expires up to `max` assignments past their accept deadline (none when none is due).
  /// Each assignment's `user` gets an `expired` message with the new message `id`.
  boost::asio::awaitable<outcome<std::vector<assignment>>> expire_batch(std::string queue,
                                                                        long long source,
                                                                        long long fencing_token,
                                                                        long long max);

  /// The queue's source index for message ids (allocated once per queue name). `held`: the
  /// index the caller uses (0: none), put back if a failover lost it and no other queue took
  /// it. With --wait-replicas a newly handed out index is on that many replicas first (else
  /// redis_unavailable).
  boost::asio::awaitable<outcome<long long>> source_index(std::string queue, long long held = 0);
  /// A batch of one: the one assignment, or std::nullopt when nobody waits or nothing is free.
  boost::asio::awaitable<outcome<std::optional<assignment>>> assign_one(
      std::string queue, long long source, long long fencing_token, long long accept_timeout_ms);
  /// Up to `max` assignments in one script call, one bus message (none when nobody waits
  /// or nothing is free). Fewer than `max` while users and resources are left: call again.
  boost::asio::awaitable<outcome<std::vector<assignment>>> assign_batch(std::string queue,
                                                                        long long source,
                                                                        long long fencing_token,
                                                                        long long accept_timeout_ms,
                                                                        long long max);

  /// How long assign.lua keeps an assignment's admission record (the state API's answer):
  /// the token's lifetime and a minute by default.
  void set_admission_record_time(std::chrono::milliseconds t) { admission_record_ = t; }
  /// --wait-replicas for the queue's slot: with n > 0, assign.lua and expire.lua do not
  /// publish; the bus message goes out once WAIT n (at most `timeout`) on the slot's node
  /// confirms the batch's writes. A WAIT short of n publishes nothing: the outbox entry is
  /// the sweeper's to re-drive after a lease (if a failover did not lose it).
  void set_wait_replicas(int n, std::chrono::milliseconds timeout) {
    wait_replicas_ = n;
    wait_timeout_ = timeout;
  }
  /// WAITs that confirmed fewer replicas than asked (their bus messages were held back).
  long long wait_replicas_short() const { return wait_short_; }
  /// What assign_batch would assign now (assign_plan.lua, read only).
  boost::asio::awaitable<outcome<admission::assign_plan>> plan_assign(std::string queue,
                                                                      long long max);
  /// assign_batch with a plan and a signed token per planned pair (`data.admission`):
  /// std::nullopt when the plan no longer held (nothing assigned; plan again).
  boost::asio::awaitable<outcome<std::optional<std::vector<assignment>>>> assign_planned(
      std::string queue, long long source, long long fencing_token, long long accept_timeout_ms,
      long long max, admission::assign_plan plan, std::vector<std::string> tokens);
  /// The admission record of assignment `id` (one HGET); std::nullopt when there is none.
  boost::asio::awaitable<outcome<std::optional<admission::record>>> admission_record(
      std::string queue, std::string id);
  /// Every queue's source index (NS:sources): index -> queue name.
  boost::asio::awaitable<outcome<std::map<long long, std::string>>> source_queues();

 private:
  /// The refusal of a name that is not valid_name (core/names.hpp).
  static failure bad_name(const char* what, const std::string& name);
  lua::assign_settings assign_settings_for(long long source, long long fencing_token,
                                           long long accept_timeout_ms, long long max) const;
  /// `batch` as made: its ids raise the least base of `queue`'s next ids (ids_made_).
  std::vector<assignment> made(const std::string& queue, std::vector<assignment> batch);
  /// With --wait-replicas: the bus message of a call on `queue`'s slot, once replicated.
  boost::asio::awaitable<void> publish_replicated(const std::string& queue,
                                                  const redis::reply& reply, std::size_t width);

  std::shared_ptr<redis::connection> conn_;
  keys keys_;
  pushonce::retention retention_;
  std::chrono::milliseconds admission_record_{std::chrono::seconds(660)};
  int wait_replicas_ = 0;
  std::chrono::milliseconds wait_timeout_{100};
  long long wait_short_ = 0;
  id_floor ids_made_;  // the least base of each queue's next ids (a rollback cannot repeat them)
};

}  // namespace pushonce
