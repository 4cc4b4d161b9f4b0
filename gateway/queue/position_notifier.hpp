#pragma once
// Live queue positions (docs/protocol.md position frames) at a cost that does not grow with
// the queue: every script that changes a queue's waiting list publishes a queue event on
// NS:leader:wake (gateway/queue/queue_event); this gateway keeps the positions of the tickets its
// sessions wait with from those events (gateway/queue/queue_view), re-reading a queue (in calls
// of at most reread_chunk users) only when it missed an event or the event counter went
// back, and pushes each waiting session its latest position
// at most once per interval (gateway/queue/position_schedule), with its estimated wait
// (gateway/queue/wait_estimates: the queue's pace read at most once a second); a session far
// from the head at most once per position_gap (cadence by distance), and a push visits
// only the sessions due (position_due), so its cost follows the assignment rate. A user no longer
// waiting (assigned, left) stops being watched. A pre-queued session is watched by its user until
// an opening moves the user (a queue event naming it, or a re-read finding it waiting).

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include "core/backoff.hpp"
#include "core/keys.hpp"
#include "core/queue_api.hpp"
#include "core/redis/connection.hpp"
#include "gateway/queue/position_schedule.hpp"
#include "gateway/queue/queue_event.hpp"
#include "gateway/queue/queue_view.hpp"
#include "gateway/queue/wait_estimates.hpp"

namespace pushonce::gateway {

class session_handle;
using queue_event_moved = queue_event::moved_users;

class position_notifier : public std::enable_shared_from_this<position_notifier> {
 public:
  /// Users per positions.lua call of a re-read: bounded, whatever the number watched.
  static constexpr std::size_t default_reread_chunk = 5000;

  position_notifier(boost::asio::any_io_executor ex, std::shared_ptr<redis::connection> conn,
                    keys k, std::chrono::milliseconds interval = std::chrono::seconds(1),
                    std::size_t reread_chunk = default_reread_chunk,
                    long long approx_after = default_approx_after);

  /// Thread-safe. The session's user waits with `ticket` at `position` just after the
  /// queue's event `seq` (what its join or position reply said).
  void watch(std::shared_ptr<session_handle> s, std::string queue, std::string user,
             long long ticket, long long position, long long seq);
  /// Thread-safe. The session's user waits in the queue's pre-queue: it is told its
  /// position when the opening moves it.
  void watch_prequeued(std::shared_ptr<session_handle> s, std::string queue, std::string user);
  void unwatch(const session_handle* s, std::string queue);
  /// The queues' estimated waits, shared with the join and position answers.
  const std::shared_ptr<wait_estimates>& estimates() const { return estimates_; }
  void unwatch_all(const session_handle* s);
  /// A message on the wake channel (a queue event, or a bare queue name: ignored).
  void on_wake(std::string payload);
  /// Every queue event may have been missed (the subscriber reconnected): re-read.
  void resync_all();

 private:
  struct watcher {
    std::weak_ptr<session_handle> s;
    std::string user;
    long long ticket = 0;  // 0: pre-queued
    told_position last;    // what the session was last told (exact 0: nothing yet)
  };
  struct queue_state {
    queue_view view;
    std::map<const session_handle*, watcher> sessions;
    std::unordered_map<long long, int> sessions_of;  // ticket -> sessions watching it
    std::unordered_multimap<std::string, const session_handle*> prequeued;  // user -> sessions
    position_due<const session_handle*> due;  // waiting sessions by when they may be told next
    std::optional<position_schedule::clock::time_point> last_move;  // the last change
  };

  void changed(const std::string& queue);
  void arm();
  void push_due();
  void push(const std::string& queue, queue_state& q, position_schedule::clock::time_point now);
  /// Reads the queue's pace (at most once a second), then pushes its positions.
  boost::asio::awaitable<void> refresh_and_push(std::string queue,
                                                position_schedule::clock::time_point now);
  static void add_ticket(queue_state& q, long long ticket);
  /// One session less watches `ticket`; the view forgets it with the last one.
  static void drop_ticket(queue_state& q, long long ticket);
  /// Forgets the session's watcher (its ticket, or its pre-queue entry).
  static void drop_watcher(queue_state& q, std::map<const session_handle*, watcher>::iterator w);
  /// Users an opening moved: their pre-queued sessions watch their tickets from now on.
  void moved(queue_state& q, long long seq, const queue_event_moved& m);
  void maybe_resync(const std::string& queue);
  boost::asio::awaitable<void> resync(std::string queue);

  std::size_t reread_chunk_;
  long long approx_after_;
  backoff reread_backoff_{std::chrono::milliseconds(500), std::chrono::seconds(10),
                          std::chrono::milliseconds(200)};
  boost::asio::strand<boost::asio::any_io_executor> strand_;
  std::shared_ptr<wait_estimates> estimates_;
  queue_api api_;
  boost::asio::steady_timer timer_;
  std::optional<position_schedule::clock::time_point> armed_;
  position_schedule schedule_;
  std::map<std::string, queue_state> queues_;
};

}  // namespace pushonce::gateway
