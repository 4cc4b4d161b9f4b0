#pragma once
// The scripts a worker runs on a message: claim.lua (the one check-and-set, which also
// delivers), and for a message that keeps failing, dead_letter.lua (and its
// dead-letter entry); release.lua hands back a lease on shutdown.

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/defaults.hpp"
#include "core/keys.hpp"
#include "core/lua/claim.hpp"
#include "core/message.hpp"
#include "core/outcome.hpp"
#include "core/redis/connection.hpp"

namespace pushonce::worker {

struct claim_options {
  std::chrono::milliseconds lease{5000};
  std::chrono::milliseconds dedup_window = defaults::dedup_window;
  long long max_attempts = 5;
  long long inbox_maxlen = 1000;
  std::chrono::milliseconds inbox_idle{std::chrono::hours(24 * 7)};
  /// --wait-replicas: > 0: claim.lua does not publish; the deliveries of each call are
  /// confirmed with WAIT N wait_timeout on the node that took them, then published (also
  /// when WAIT times out: counted, see docs/operations.md "Failover semantics").
  int wait_replicas = 0;
  std::chrono::milliseconds wait_timeout{100};
};

class claim_client {
 public:
  claim_client(std::shared_ptr<redis::connection> conn, keys k, claim_options opts);

  /// The race for the batch whose first message is `first_id` (claim_batch.lua): true when
  /// this worker won it and should claim it; false when another worker did (that worker's
  /// claim.lua call decides each message).
  boost::asio::awaitable<outcome<bool>> claim_batch(const std::string& first_id,
                                                    const std::string& owner);
  /// Claims (and, when won, delivers) every message of `batch` in one claim.lua call (on
  /// Redis Cluster: one call per slot, pipelined). With --wait-replicas the delivered
  /// frames are published after WAIT, also when the call failed after delivering some.
  boost::asio::awaitable<outcome<std::vector<lua::claim_outcome>>> claim(
      std::span<const bus_message> batch, std::string owner);
  /// Hands back a lease the caller holds (shutdown): true when it held it and handed it
  /// back, false when it no longer held it, or why Redis did not answer.
  boost::asio::awaitable<outcome<bool>> release(const bus_message& m, std::string owner);
  /// Marks the message's claim dead (while the caller still holds the lease) and adds it to
  /// the dead-letter stream, only when marked: one script on a single Redis, the entry after
  /// the mark on a cluster.
  boost::asio::awaitable<outcome<lua::dead_letter_result>> dead_letter(const bus_message& m,
                                                                       std::string owner,
                                                                       std::string reason,
                                                                       long long attempts);

  /// WAITs that returned fewer replicas than --wait-replicas (the frames were published).
  std::uint64_t wait_timeouts() const { return wait_timeouts_; }

 private:
  boost::asio::awaitable<outcome<std::vector<lua::claim_outcome>>> claim_per_slot(
      std::span<const bus_message> batch, const lua::claim_settings& s);
  /// --wait-replicas: WAIT on the node of each slot that took a delivery, then publish
  /// the delivered frames (and those of earlier deliveries claim.lua found unpublished);
  /// a frame whose publish failed keeps `frame_pending`.
  boost::asio::awaitable<void> confirm_and_publish(std::span<const bus_message> batch,
                                                   std::vector<lua::claim_outcome>& out);
  /// published.lua for batch[which[j]] at offsets[j]; true for each frame sent.
  boost::asio::awaitable<std::vector<bool>> publish_frames(std::span<const bus_message> batch,
                                                           const std::vector<std::size_t>& which,
                                                           const std::vector<long long>& offsets);
  /// After a failed claim: the messages of `batch` whose records say delivered but not
  /// published (the part of the call that ran) are published.
  boost::asio::awaitable<void> publish_recorded(std::span<const bus_message> batch);

  std::shared_ptr<redis::connection> conn_;
  keys keys_;
  claim_options opts_;
  std::uint64_t wait_timeouts_ = 0;
};

}  // namespace pushonce::worker
