#pragma once
// The subscription bookkeeping of one Pub/Sub connection, with no socket (the sans-io half
// of redis::subscriber, in the shape of Boost.Redis' detail/subscription_tracker):
//
//  - `wanted`: the channels the user asked for. They are what gets subscribed again after
//    every reconnect, and the only channels whose messages are passed on.
//  - `sent[ch]`: SUBSCRIBE commands whose confirmation has not arrived. A waiter of `ch`
//    completes when the count drops to zero, so it never completes on the confirmation of
//    an older SUBSCRIBE that an UNSUBSCRIBE has already undone.
//  - `resubscribing`: channels re-sent after a (re)connect whose confirmation is still due;
//    when it empties the set is `ready` (the caller runs its on_connect once).
//  - waiters have a deadline; expire() fails them with error::timeout (the channel stays
//    wanted and is subscribed on the next connect).
//
// Classic Pub/Sub: Redis may refuse a SUBSCRIBE with an error reply (NOPERM: the ACL user
// may not subscribe to a channel; one error for the whole command). Replies come in order,
// so the error belongs to the oldest SUBSCRIBE still unanswered (`inflight`). Its channels
// stay wanted but are `refused`: their waiters fail with error::refused, the reconnect's
// round ends without them (on_connect still runs for the others), and they are sent again
// after a backoff (doubling from retry_initial up to retry_max) until Redis confirms them.
// A refused channel confirmed again is handed to the caller (take_recovered): its
// subscribers missed messages meanwhile and must catch up.
//
// Commands to send are collected in an outbox that the caller encodes and writes; SUBSCRIBE
// or SSUBSCRIBE (sharded Pub/Sub) is fixed at construction.
//
// Sharded Pub/Sub (Redis Cluster) only: one SSUBSCRIBE never names channels of two slots
// (CROSSSLOT); a channel the node gives up is `dropped` — a `sunsubscribe` push that this
// set did not ask for (its slot migrated, or the node turned replica), or a MOVED error
// answering an SSUBSCRIBE. A dropped channel is no longer wanted here, its waiters fail with
// error::moved, and take_dropped() hands it to the caller, who subscribes it on the new
// owner.

#include <boost/asio/any_completion_handler.hpp>
#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <system_error>
#include <vector>

#include "core/redis/reply.hpp"

namespace pushonce::redis {

class subscription_set {
 public:
  using clock_type = std::chrono::steady_clock;
  using waiter = boost::asio::any_completion_handler<void(std::error_code)>;
  using deliver_fn = std::function<void(waiter&&, std::error_code)>;

  struct message {
    std::string channel;
    std::string payload;
  };

  subscription_set(bool sharded, deliver_fn deliver);

  /// Wants `ch`; `w` completes once Redis confirmed it (at once when it already is).
  void subscribe(std::string ch, waiter w, clock_type::time_point deadline);
  /// Stops wanting `ch` (an UNSUBSCRIBE is sent when connected).
  void unsubscribe(const std::string& ch);

  /// A connection is up: every wanted channel is sent again (batched).
  void on_connected();
  /// The connection is gone: nothing sent is pending any more; waiters keep waiting.
  void on_disconnected();
  /// A reply or push from Redis; the message it carries for a wanted channel, if any.
  std::optional<message> on_reply(reply& r);
  /// Fails waiters past their deadline with error::timeout; sends the refused channels
  /// whose retry is due.
  void expire(clock_type::time_point now);
  /// Fails every waiter with `ec`, and every later subscribe.
  void close(std::error_code ec);

  /// Commands to write, in order (taken: the outbox is empty afterwards).
  std::vector<command> take_commands();
  bool has_commands() const { return !outbox_.empty(); }
  /// True once after every channel of a (re)connect has been confirmed again.
  bool take_ready();
  /// Sharded: channels the server dropped since the last call (taken).
  std::vector<std::string> take_dropped();

  /// A SUBSCRIBE Redis refused: its channels, the error text, and when they are tried again.
  struct refusal {
    std::vector<std::string> channels;
    std::string error;
    std::chrono::milliseconds retry_in{0};
  };
  /// Refusals since the last call (taken), to be logged.
  std::vector<refusal> take_refusals();
  /// Channels refused before and now confirmed (taken): their messages in between are lost.
  std::vector<std::string> take_recovered();
  /// Something for take_refusals() or take_recovered() (cheap: asked after every reply).
  bool has_reports() const { return !refusals_.empty() || !recovered_.empty(); }
  /// Wanted but refused by Redis, waiting for a retry (or its answer).
  bool refused(const std::string& ch) const { return retry_.count(ch) != 0; }
  std::size_t refused_count() const { return retry_.size(); }

  static constexpr std::chrono::milliseconds retry_initial{200};
  static constexpr std::chrono::milliseconds retry_max{5000};

  bool wants(const std::string& ch) const { return wanted_.count(ch) != 0; }
  bool pending(const std::string& ch) const { return sent_.count(ch) != 0; }
  std::size_t waiters() const { return waiters_.size(); }
  bool connected() const { return connected_; }

  /// Channels per SUBSCRIBE command when resubscribing.
  static constexpr std::size_t channels_per_command = 512;

 private:
  struct waiter_entry {
    waiter handler;
    clock_type::time_point deadline;
  };
  void send(command cmd) { outbox_.push_back(std::move(cmd)); }
  void complete_waiters(const std::string& ch, std::error_code ec);
  void resubscribed(const std::string& ch);
  void dropped(const std::string& ch);
  void on_error_reply(const reply& r);
  /// Classic: the oldest unanswered SUBSCRIBE was refused with `r`.
  void on_refused(const reply& r);
  /// Classic: a confirmation of `ch` answers part of the oldest unanswered SUBSCRIBE.
  void answered(const std::string& ch);
  /// Queues SUBSCRIBE commands for `channels` (at most channels_per_command each).
  void send_subscribe(const std::vector<std::string>& channels);
  void retry_due(clock_type::time_point now);

  bool sharded_;
  deliver_fn deliver_;
  bool connected_ = false;
  bool ready_ = false;
  std::error_code closed_;
  std::set<std::string> wanted_;
  std::map<std::string, int> sent_;
  std::map<std::string, int> unsent_;  // sharded: SUNSUBSCRIBEs not yet confirmed
  std::vector<std::string> dropped_;
  std::set<std::string> resubscribing_;
  std::multimap<std::string, waiter_entry> waiters_;
  std::vector<command> outbox_;
  // Classic: the channels of each SUBSCRIBE sent and not fully answered, oldest first.
  std::deque<std::deque<std::string>> inflight_;
  struct retry_entry {
    std::chrono::milliseconds delay{0};
    std::optional<clock_type::time_point> due;  // none: a SUBSCRIBE of it is out
  };
  std::map<std::string, retry_entry> retry_;  // refused channels
  std::vector<refusal> refusals_;
  std::vector<std::string> recovered_;
};

}  // namespace pushonce::redis
