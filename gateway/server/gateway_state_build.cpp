// gateway_state's constructor: the one place that knows every part of the state (the
// services of every floor of gateway/), and the subscribers' wiring to them.
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>

#include "core/lua/revoke.hpp"
#include "gateway/auth/auth_failures.hpp"
#include "gateway/auth/authenticator.hpp"
#include "gateway/auth/revocations.hpp"
#include "gateway/http/admission_api.hpp"
#include "gateway/http/gate.hpp"
#include "gateway/http/poll_routes.hpp"
#include "gateway/limits/connection_admission.hpp"
#include "gateway/limits/slot_counter.hpp"
#include "gateway/queue/join_pow.hpp"
#include "gateway/queue/position_notifier.hpp"
#include "gateway/server/revocation_sync.hpp"
#include "gateway/state/gateway_state.hpp"

namespace pushonce::gateway {

namespace {

// The wake channel's queue events go to the position notifier, the control channel's
// disconnects and revocations to revocation_sync, every other channel to the registry's
// sessions.
std::shared_ptr<redis::subscriber> make_gateway_subscriber(boost::asio::any_io_executor ex,
                                                           const redis::connection_options& opts,
                                                           gateway_state& st) {
  auto* reg = &st.registry;
  auto* state = &st;
  auto positions = st.positions;
  auto wake = st.keys.wake_channel();
  auto control = lua::control_channel(st.keys);
  auto sub = redis::subscriber::create(
      ex, opts, [reg, positions, wake, control, state](const std::string& ch, std::string payload) {
        if (ch == wake)
          positions->on_wake(std::move(payload));
        else if (ch == control)
          on_control_message(*state, payload);
        else
          reg->on_message(ch, std::move(payload));
      });
  sub->on_connect([reg, positions, ex, state] {
    reg->on_subscriber_connect();
    positions->resync_all();  // queue events may have been missed meanwhile
    // Revocations broadcast meanwhile were missed: read them again.
    boost::asio::co_spawn(ex, load_revocations(*state), boost::asio::detached);
  });
  // A channel Redis refused (ACL) and confirmed on a retry: its sessions catch up on what
  // they missed; the wake channel's queue events are re-read.
  sub->on_resubscribed([reg, positions, wake](const std::string& ch) {
    if (ch == wake)
      positions->resync_all();
    else
      reg->on_channel_resubscribed(ch);
  });
  return sub;
}

// Redis Cluster: user channels are SPUBLISHed by claim.lua; they are SSUBSCRIBEd on the
// master of each user's slot. The wake channel stays classic Pub/Sub. None on one Redis.
std::shared_ptr<redis::sharded_subscriber> make_gateway_sharded_subscriber(
    boost::asio::any_io_executor ex, const redis::connection_options& opts,
    std::shared_ptr<redis::connection> conn, session_registry& registry) {
  if (opts.cluster.empty()) return nullptr;
  auto* reg = &registry;
  auto sharded = redis::sharded_subscriber::create(
      ex, opts, std::move(conn), [reg](const std::string& ch, std::string payload) {
        reg->on_message(ch, std::move(payload));
      });
  sharded->on_resubscribed([reg](const std::string& ch) { reg->on_channel_resubscribed(ch); });
  return sharded;
}

}  // namespace

gateway_state::gateway_state(boost::asio::any_io_executor ex, gateway_parts parts)
    : settings(std::move(parts.settings)),
      keys(parts.keys),
      presence_instance(std::move(parts.presence_instance)),
      conn(std::move(parts.links.conn)),
      health_conn(std::move(parts.links.health_conn)),
      heartbeat_conn(std::move(parts.links.heartbeat_conn)),
      registry(keys),
      queues(std::make_unique<queue_api>(conn, keys, settings.retention)),
      pub(std::make_unique<publisher>(conn, keys, publisher_options{settings.retention})),
      inboxes(std::make_unique<inbox>(conn, keys, settings.idle_ttl, settings.inbox_page)),
      positions(std::make_shared<position_notifier>(ex, conn, keys, settings.position_interval,
                                                    position_notifier::default_reread_chunk,
                                                    settings.approx_after)),
      pow(std::make_shared<join_pow>(conn, keys, std::move(parts.pow_secret))),
      auth(std::move(parts.auth)),
      revoked_users(std::make_unique<revocations>()),
      sub(make_gateway_subscriber(ex, parts.links.subscriber_options, *this)),
      sharded(make_gateway_sharded_subscriber(ex, parts.links.subscriber_options, conn, registry)),
      connections(slot_counter::create(settings.max_connections, settings.max_connections_per_ip)),
      forwarded_connections(slot_counter::create(0, settings.max_connections_per_ip)),
      sessions_per_ip(slot_counter::create(0, settings.max_sessions_per_ip)),
      sessions_per_user(slot_counter::create(0, settings.max_sessions_per_user)),
      admit(std::make_unique<connection_admission>(connections, forwarded_connections,
                                                   sessions_per_ip, settings.trusted,
                                                   origin_policy{settings.allowed_origins})),
      bearer_failures(std::make_unique<auth_failures>()),
      admission_queues(std::make_unique<admission_sources>()),
      gate(std::make_unique<gate_caches>()),
      polls(std::make_unique<poll_state>()) {
  registry.set_subscriber(sub);
  if (sharded) registry.set_sharded_subscriber(sharded);
}

gateway_state::~gateway_state() = default;

}  // namespace pushonce::gateway
