#pragma once
// The positions of the tickets one gateway watches in one queue, kept from the queue's
// events (gateway/queue/queue_event) without asking Redis: what a queue change costs a gateway
// does not grow with the number of people waiting. Decided without sockets or timers;
// position_notifier feeds it and carries out what it answers.
//
// Model. Tickets are handed out in increasing order and a join appends at the tail, so a
// waiting ticket's position changes only when a lower ticket leaves the waiting list. The
// view keeps the tickets removed since its last rebase in an order-statistic set; a watched
// ticket's position is `base - (removed tickets below it)`, its base fixed when it was
// last known exactly. A join or `position` reply is exact at some event sequence: at the
// view's own sequence it is taken as it is; older, it is brought forward with the recent
// events (a ring of them); newer, it waits until the view has caught up with that event.
//
// Invariants: events apply in sequence order, each once; a gap (an event lost while the
// subscriber was away) asks for a re-read of every watched ticket (`resync`, in bounded
// calls, each true at its own event: see resynced()),
// during which events are held back and replayed after it; a watched ticket removed by an
// event is gone (the user left or was assigned). Each event number is heard once per
// subscription, in increasing order (one Redis publishes them on one channel): a number
// heard again (not above the last one heard) means the queue's counter went back (a
// failover lost its last increments), and the view re-reads, as after a gap.

#include <cstddef>
#include <deque>
#include <ext/pb_ds/assoc_container.hpp>
#include <ext/pb_ds/tree_policy.hpp>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <utility>
#include <vector>

namespace pushonce::gateway {

/// A re-read of `n` watched users in calls of at most `max` users each: the [begin, end)
/// ranges, in order (none for n == 0; max 0 counts as 1).
std::vector<std::pair<std::size_t, std::size_t>> reread_chunks(std::size_t n, std::size_t max);

class queue_view {
 public:
  /// What a watched ticket is now.
  struct standing {
    enum class kind { waiting, unknown, gone } state = kind::gone;
    long long position = 0;  // when waiting
  };
  struct resync_item {
    long long ticket = 0;
    long long position = 0;  // 0: not waiting
  };

  /// How many recent events (and at most how many of their tickets) are kept to bring an
  /// older reply forward; how many events at most are held back during a gap or re-read.
  explicit queue_view(std::size_t ring_events = 4096, std::size_t max_held = 65536);

  /// A queue event. Returns true when the watched positions may have changed.
  bool on_event(long long seq, bool removal, std::span<const long long> tickets);
  /// Watch `ticket`, known to stand at `position` just after event `seq`.
  void watch(long long ticket, long long position, long long seq);
  void unwatch(long long ticket);
  standing at(long long ticket) const;

  /// True when a re-read of every watched ticket is needed (and none is out).
  bool needs_resync() const { return needs_resync_ && !resyncing_; }
  /// A re-read goes out: the tickets it must cover (every watched one).
  std::vector<long long> begin_resync();
  /// The re-read answered: each ticket's position just after event `seq`. `asked` are the
  /// tickets begin_resync() returned: one not in `items` is gone (its user rejoined with
  /// another ticket or left).
  void resynced(long long seq, std::span<const long long> asked,
                std::span<const resync_item> items);
  /// One bounded call of a re-read: positions true just after event `seq`.
  struct resync_part {
    long long seq = 0;
    std::vector<resync_item> items;
  };
  /// The re-read answered in parts (one per bounded call, each true at its own event): the
  /// view restarts at the oldest part's event; the tickets of later parts wait, as replies
  /// newer than the view do, until the events up to their part's are applied.
  void resynced(std::span<const long long> asked, std::span<const resync_part> parts);
  /// The re-read failed: it is needed again.
  void resync_failed();
  /// Events may have been missed (the subscriber reconnected): a re-read is needed.
  void lost_events() { needs_resync_ = true; }

  long long seq() const { return applied_; }
  /// How many times an event number was heard again (the counter went back).
  std::size_t counter_regressions() const { return regressions_; }
  std::size_t pending_count() const { return pending_.size(); }
  std::size_t held_count() const { return held_.size(); }
  bool resyncing() const { return resyncing_; }
  std::size_t watched() const { return active_.size() + pending_.size(); }
  std::size_t removed_kept() const { return removed_.size(); }

 private:
  using ordered_set =
      __gnu_pbds::tree<long long, __gnu_pbds::null_type, std::less<long long>,
                       __gnu_pbds::rb_tree_tag, __gnu_pbds::tree_order_statistics_node_update>;
  struct event {
    long long seq;
    bool removal;
    std::vector<long long> tickets;
  };
  struct pending {
    long long position;
    long long seq;
  };

  void apply(event e);
  void drain_held();
  void activate(long long ticket, long long position);
  /// `position` true just after event `seq` (< applied_), brought forward with the ring;
  /// nullopt when the ring does not reach back that far. 0: removed meanwhile.
  std::optional<long long> forward(long long ticket, long long position, long long seq) const;
  void activate_pending();
  void rebase();
  void counter_went_back();

  std::size_t ring_events_, max_held_;
  long long applied_ = 0;  // the last event applied (0: none seen yet)
  long long heard_ = 0;    // the last event number heard (0: none yet)
  std::size_t regressions_ = 0;
  bool needs_resync_ = false, resyncing_ = false;
  ordered_set removed_;                    // tickets removed since the last rebase
  std::map<long long, long long> active_;  // ticket -> base
  std::map<long long, pending> pending_;   // ticket -> a reply newer than applied_
  std::deque<event> ring_;                 // the latest events, consecutive, up to applied_
  std::size_t ring_tickets_ = 0;           // tickets held in ring_ (at most max_held_)
  std::map<long long, event> held_;        // events beyond applied_ + 1, or during a re-read
};

}  // namespace pushonce::gateway
