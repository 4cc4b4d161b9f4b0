#pragma once
// What every connection of the gateway shares: settings, Redis, the registry, the
// authenticator. On the ground floor of gateway/: the services of the floors above are
// forward-declared and held by pointer; built complete by its constructor, which lives with
// the server that knows every part (server/gateway_state_build.cpp). No Beast here.

#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/admission_token.hpp"
#include "core/jwt.hpp"
#include "core/keys.hpp"
#include "core/publisher.hpp"
#include "core/queue_api.hpp"
#include "core/redis/connection.hpp"
#include "core/redis/sharded_subscriber.hpp"
#include "core/redis/subscriber.hpp"
#include "gateway/state/inbox.hpp"
#include "gateway/state/limit_settings.hpp"
#include "gateway/state/presence_ledger.hpp"
#include "gateway/state/probe_cache.hpp"
#include "gateway/state/session_registry.hpp"

namespace pushonce::gateway {

class admission_sources;     // http/admission_api
struct gate_caches;          // http/gate
struct poll_state;           // http/poll_routes
class auth_failures;         // auth/auth_failures
class authenticator;         // auth/authenticator
class connection_admission;  // limits/connection_admission
class join_pow;              // queue/join_pow
class position_notifier;     // queue/position_notifier
class revocations;           // auth/revocations
class slot_counter;          // limits/slot_counter

struct gateway_settings {
  std::string id;
  bool dev_auth = false;
  std::vector<std::string> allowed_origins;     // empty: any
  std::optional<std::string> api_key;           // PUSHONCE_API_KEY; none: /api/publish is 403
  std::optional<std::string> api_key_previous;  // PUSHONCE_API_KEY_PREVIOUS: also accepted
  std::optional<std::string> admin_token;       // PUSHONCE_ADMIN_TOKEN; none: /api/status is 403
  std::chrono::milliseconds idle_ttl{std::chrono::hours(24 * 7)};
  std::chrono::milliseconds hello_timeout{std::chrono::seconds(10)};
  std::size_t max_frame = 64 * 1024;    // WebSocket payload; over: 1009
  std::size_t max_queue_frames = 1024;  // send queue per session; over: 1013
  std::size_t max_queue_bytes = 4u << 20;
  std::size_t inbox_page = 100;                    // XRANGE COUNT of a replay
  std::chrono::milliseconds presence_check{5000};  // --presence-check-ms
  long long approx_after = 10000;  // --approx-after: beyond it, positions go out rounded
  std::chrono::milliseconds position_interval{1000};  // position frames: one per session per
  pushonce::retention retention;                      // of what /api/publish writes

  // Limits (docs/security.md has the table and the reasons). 0 = no limit.
  std::size_t max_connections = 0;  // TCP connections (HTTP and WebSocket); server.cpp
                                    // sets the open-files limit minus 64 when not given
  std::size_t max_connections_per_ip = 1000;
  std::size_t max_sessions_per_ip = 1000;  // WebSocket sessions of one client address
  std::size_t max_sessions_per_user = 100;
  std::chrono::milliseconds http_idle_timeout{std::chrono::seconds(15)};  // wait for a request
  // From accept to the end of the first request's header, and from the first byte to the
  // end of the header of a later one: a connection that sends nothing is closed this soon.
  std::chrono::milliseconds http_header_timeout{std::chrono::seconds(5)};
  std::size_t http_max_requests = 1000;                              // per keep-alive connection
  std::chrono::milliseconds close_timeout{std::chrono::seconds(5)};  // a closing session's
                                                                     // socket is dropped after
  rate_limits frame_rates;
  std::size_t max_data_bytes = 64 * 1024;  // serialised data of a published message
  double publish_rate = 10000;             // /api/publish requests/s per API key (0: off)
  double publish_burst = 20000;
  bool metrics_auth = false;  // /metrics wants the admin token
  trusted_proxies trusted;    // --trusted-proxy
  // --jwt-leeway (30 s), --jwt-audience, --jwt-issuer, --jwt-max-lifetime (7 days)
  jwt::verify_options jwt{std::chrono::seconds(30), std::nullopt, std::nullopt,
                          std::chrono::seconds(7 * 24 * 3600), std::nullopt};
  // GET /.well-known/jwks.json: the admission keys' public halves (core/admission_token).
  std::string admission_jwks = R"({"keys":[]})";
  // The gate (gateway/http/gate): the admission keys that verify, the issuer they must name,
  // and --gate-cookie-domain.
  std::shared_ptr<const ::pushonce::admission::verifier> admission_verifier;
  std::string admission_issuer = "pushonce";
  std::string gate_cookie_domain;
  // SIGTERM: /readyz turns 503 at once, sessions are closed with 1001 this much later.
  std::chrono::milliseconds drain_delay{0};
};

/// Counters of this gateway, exported by GET /metrics.
struct gateway_metrics {
  std::atomic<std::uint64_t> sessions_opened{0}, auth_failures{0}, frames_sent{0},
      slow_consumer_closes{0}, http_requests{0}, api_messages{0}, connections_refused{0},
      sessions_refused{0}, rate_limited_frames{0}, rate_limit_closes{0}, api_rate_limited{0},
      close_deadline_drops{0}, epoch_rotations{0}, offset_regression_closes{0}, bearer_failures{0},
      bearer_blocked{0}, catch_up_gap_closes{0};
  // Token refresh and expiry (gateway/session/token_expiry).
  std::atomic<std::uint64_t> token_refreshes{0}, token_refresh_refusals{0}, token_expiry_closes{0};
};

/// The Redis links of one gateway, created (not started) by the server's build step.
struct redis_links {
  std::shared_ptr<redis::connection> conn;            // commands (5 s deadline)
  std::shared_ptr<redis::connection> health_conn;     // /healthz, /metrics (1 s deadline)
  std::shared_ptr<redis::connection> heartbeat_conn;  // the heartbeat alone: HTTP load on
                                                      // health_conn cannot delay it
  /// The subscribers' own links are made by gateway_state, which routes their messages.
  redis::connection_options subscriber_options;
};

/// Everything gateway_state is built from: what the server read from options and the
/// environment, and the links it created.
struct gateway_parts {
  gateway_settings settings;
  pushonce::keys keys;
  /// This process's presence instance (core/lua/presence.hpp); empty: sessions not counted.
  std::string presence_instance;
  redis_links links;
  std::unique_ptr<authenticator> auth;
  std::optional<std::string> pow_secret;  // PUSHONCE_POW_SECRET
};

/// Built complete in one place (server/gateway_state_build.cpp), in four parts: the Redis links,
/// the session services on them, the limits, and the probes and counters of the HTTP routes. Routes
/// and sessions read the members they use; none is filled in after construction.
struct gateway_state {
  gateway_state(boost::asio::any_io_executor ex, gateway_parts parts);
  ~gateway_state();
  gateway_state(const gateway_state&) = delete;
  gateway_state& operator=(const gateway_state&) = delete;

  gateway_settings settings;
  pushonce::keys keys;
  std::string presence_instance;
  // The sessions Redis counts here (presence_open landed): what a reclaim counts again.
  std::shared_ptr<presence_ledger> presence = std::make_shared<presence_ledger>();
  std::atomic<bool> stopping{false};
  std::atomic<bool> draining{false};  // SIGTERM received: /readyz answers 503

  // Redis links.
  std::shared_ptr<redis::connection> conn;
  std::shared_ptr<redis::connection> health_conn;
  std::shared_ptr<redis::connection> heartbeat_conn;

  // Session services: what a session and the publish/queue routes call.
  session_registry registry;
  std::unique_ptr<queue_api> queues;
  std::unique_ptr<publisher> pub;
  std::unique_ptr<inbox> inboxes;
  std::shared_ptr<position_notifier> positions;
  std::shared_ptr<join_pow> pow;  // proof of work at join (null: never asked)
  std::unique_ptr<authenticator> auth;
  // Revoked tokens (POST /api/disconnect with revoke): loaded from NS:{revoked} at start and
  // after every subscriber reconnect, updated by the control channel (server.cpp).
  // revocations::revoked(who) is checked at hello (1008 "revoked") and at /sse (401): a
  // lookup in memory, no Redis round trip.
  std::unique_ptr<revocations> revoked_users;
  // Subscribers: the wake channel goes to positions, user channels to the registry, the
  // control channel to revocation_sync (server.cpp).
  std::shared_ptr<redis::subscriber> sub;  // the wake channel (and user channels on one Redis)
  std::shared_ptr<redis::sharded_subscriber> sharded;  // Redis Cluster: user channels

  // Limits.
  std::shared_ptr<slot_counter> connections;            // per TCP peer, and in total
  std::shared_ptr<slot_counter> forwarded_connections;  // per client a trusted proxy names
  std::shared_ptr<slot_counter> sessions_per_ip;        // WebSocket sessions per client address
  std::shared_ptr<slot_counter> sessions_per_user;      // after hello
  std::unique_ptr<connection_admission> admit;          // the caps above and the Origin rule
  std::unique_ptr<auth_failures> bearer_failures;       // wrong API keys and admin tokens

  // Probes and counters of the HTTP routes.
  gateway_metrics metrics;
  probe_cache<bool> health_cache;                       // /healthz: Redis answered PING
  probe_cache<redis_write_probe> ready_cache;           // /readyz: Redis accepted a tiny write
  probe_cache<std::string> stats_cache;                 // /metrics: the Redis part of the text
  probe_cache<std::size_t> heap_cache;                  // /metrics: mallinfo2's heap in use
  std::unique_ptr<admission_sources> admission_queues;  // /api/admission/ID: id -> queue
  std::unique_ptr<gate_caches> gate;                    // /api/gate: tokens, states, renewals
  std::unique_ptr<poll_state> polls;                    // /api/queue/Q/...: polling clients
};

}  // namespace pushonce::gateway
