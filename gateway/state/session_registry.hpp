#pragma once
// Every session of this gateway, and the routing of user channels to sessions (the
// shared_state of Beast's chat-multi). One redis::subscriber per gateway: a user's channel
// is subscribed while the user has at least one session here. On a Redis Cluster user
// channels go through a redis::sharded_subscriber instead (SSUBSCRIBE on the master of the
// user's slot); a channel subscribed again after its slot moved makes its sessions catch
// up from the inbox, as a reconnect of the subscriber does. A channel message is the
// complete frame text: it is wrapped once in a shared_ptr<const std::string> and handed to
// every session of the user. Targets are copied under the lock and called outside it.

#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>
#include <vector>

#include "core/keys.hpp"
#include "core/outcome.hpp"

namespace pushonce::redis {
class subscriber;
class sharded_subscriber;
}  // namespace pushonce::redis

namespace pushonce::gateway {

class session_handle;

class session_registry {
 public:
  explicit session_registry(keys k) : keys_(std::move(k)) {}
  session_registry(const session_registry&) = delete;
  session_registry& operator=(const session_registry&) = delete;

  void set_subscriber(std::shared_ptr<redis::subscriber> sub);
  /// Redis Cluster: user channels through `sub` (set before the first session).
  void set_sharded_subscriber(std::shared_ptr<redis::sharded_subscriber> sub);

  /// A connection became a session (WebSocket or SSE) / ended (counted, closed on shutdown).
  void attach(const std::shared_ptr<session_handle>& s);
  void detach(const session_handle* s);
  std::size_t size() const;
  /// A session reachable by its id (the welcome's "session"): POST /sse/op finds it here.
  /// Named at welcome, unnamed when it ends.
  void name(const std::string& id, const std::shared_ptr<session_handle>& s);
  void unname(const std::string& id);
  std::shared_ptr<session_handle> find(const std::string& id) const;

  /// Routes the user's channel to `s`; completes when the channel subscription is
  /// confirmed by Redis (redis_unavailable, with the reason, when it could not be within
  /// the command timeout).
  boost::asio::awaitable<outcome<none>> add_route(std::shared_ptr<session_handle> s,
                                                  std::string user);
  /// Stops routing to `s`; the last session of a user unsubscribes the channel.
  void remove_route(const session_handle* s, const std::string& user);
  std::size_t users() const;
  /// The users with at least one routed session here (the inboxes kept alive).
  std::vector<std::string> routed_users() const;
  /// Each routed user with its number of live sessions here (presence_reclaim.lua).
  std::vector<std::pair<std::string, std::size_t>> routed_user_sessions() const;

  /// The subscriber's callbacks.
  void on_message(const std::string& channel, std::string payload);
  void on_subscriber_connect();
  /// `channel` was subscribed again (sharded: its slot moved or the node reconnected; classic:
  /// Redis refused it, then confirmed it on a retry): its sessions catch up.
  void on_channel_resubscribed(const std::string& channel);

  /// Closes the routed sessions of `user` (POST /api/disconnect: 1008 "disconnected");
  /// returns how many.
  std::size_t close_user(const std::string& user, std::uint16_t code, const std::string& reason);
  /// Closes every session (shutdown: 1001 "going away").
  void close_all(std::uint16_t code, const std::string& reason);

 private:
  keys keys_;
  std::shared_ptr<redis::subscriber> sub_;
  std::shared_ptr<redis::sharded_subscriber> sharded_;
  mutable std::mutex mutex_;
  std::map<const session_handle*, std::weak_ptr<session_handle>> all_;
  struct route {
    std::string user;
    std::vector<std::weak_ptr<session_handle>> sessions;
  };
  std::map<std::string, route> routes_;
  std::map<std::string, std::weak_ptr<session_handle>>
      named_;  // session id → session  // channel → the user's sessions
};

}  // namespace pushonce::gateway
