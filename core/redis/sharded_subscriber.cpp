#include "core/redis/sharded_subscriber.hpp"

#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "core/exit_on_exception.hpp"
#include "core/log.hpp"
#include "core/redis/channel_routes.hpp"
#include "core/redis/error.hpp"
#include "core/redis/slot_map.hpp"
#include "core/use_tuple.hpp"

namespace pushonce::redis {

namespace asio = boost::asio;

namespace {
using clock_type = std::chrono::steady_clock;
constexpr std::chrono::milliseconds tick{100};
constexpr std::chrono::milliseconds refresh_period{5000};  // the map is read this often
constexpr std::chrono::milliseconds unplaced_gap{200};     // while a channel has no node
constexpr std::chrono::milliseconds node_down_gap{500};    // while a node with channels is down
}  // namespace

// Everything below runs on `strand`. The node subscribers run on their own strands: their
// callbacks post back here.
struct sharded_subscriber::state : std::enable_shared_from_this<state> {
  state(asio::any_io_executor e, connection_options o, std::shared_ptr<connection> c, message_fn fn)
      : ex(std::move(e)),
        strand(asio::make_strand(ex)),
        opts(std::move(o)),
        cluster(std::move(c)),
        on_message(std::move(fn)),
        ticker(strand) {}

  struct node {
    std::shared_ptr<subscriber> sub;
    bool was_up = false;  // connected before: its next on_connect is a reconnect
  };

  asio::any_io_executor ex;
  asio::strand<asio::any_io_executor> strand;
  connection_options opts;
  std::shared_ptr<connection> cluster;
  message_fn on_message;
  resumed_fn on_resubscribed;
  asio::steady_timer ticker;
  std::optional<slot_map> map;
  channel_routes routes;
  std::map<std::string, node> nodes;  // by node_address::key()
  std::set<std::string> moved;        // placed before, re-placed: `resubscribed` is due
  std::map<std::string, clock_type::time_point> deaf;  // not heard since, until resubscribed
  bool started = false, stopped = false, refreshing = false, again = false;
  std::vector<std::shared_ptr<asio::steady_timer>> refresh_waiters;
  clock_type::time_point last_refresh{};
  clock_type::time_point map_asked{};  // when the map in `map` was asked for
  std::atomic<bool> ready{false};

  // --- node subscribers ----------------------------------------------------------------------
  std::shared_ptr<subscriber> node_for(const node_address& a) {
    auto key = a.key();
    if (auto it = nodes.find(key); it != nodes.end()) return it->second.sub;
    auto o = opts;
    o.cluster.clear();
    o.where.host = a.host;
    o.where.port = a.port;
    o.where.db = 0;
    auto sub = subscriber::create(ex, std::move(o), on_message, true);
    std::weak_ptr<state> weak = shared_from_this();
    sub->on_dropped([weak, key](const std::string& ch) {
      if (auto self = weak.lock())
        asio::post(self->strand, [self, key, ch] { self->node_dropped(key, ch); });
    });
    sub->on_lost([weak, key](clock_type::time_point heard_until) {
      if (auto self = weak.lock())
        asio::post(self->strand, [self, key, heard_until] { self->node_lost(key, heard_until); });
    });
    sub->on_connect([weak, key] {
      if (auto self = weak.lock()) asio::post(self->strand, [self, key] { self->node_up(key); });
    });
    sub->start();
    nodes.emplace(key, node{sub, false});
    return sub;
  }

  const node_address* address_of(const std::string& key) const {
    if (!map) return nullptr;
    for (const auto& m : map->masters())
      if (m.key() == key) return &m;
    return nullptr;
  }

  // `ch` may have missed messages published since `t` (the earliest such time is kept).
  void mark_deaf(const std::string& ch, clock_type::time_point t) {
    auto [it, added] = deaf.emplace(ch, t);
    if (!added && t < it->second) it->second = t;
  }

  void resubscribed(const std::string& ch) {
    auto since = clock_type::now();  // nothing known to be missed: the margin's worth only
    if (auto it = deaf.find(ch); it != deaf.end()) {
      since = it->second;
      deaf.erase(it);
    }
    if (on_resubscribed) on_resubscribed(ch, since);
  }

  // A node's connection was lost: its channels are not heard until it is back or they move.
  void node_lost(const std::string& key, clock_type::time_point heard_until) {
    if (stopped) return;
    for (const auto& ch : routes.on(key)) mark_deaf(ch, heard_until);
  }

  // A node gave `ch` up (its slot moved): placed nowhere until the map says where.
  void node_dropped(const std::string& key, const std::string& ch) {
    if (stopped || !routes.unplace(ch, key)) return;
    log::info("redis cluster: {} gave up sharded channel {}; reading the slot map", key, ch);
    moved.insert(ch);
    mark_deaf(ch, clock_type::now());
    want_refresh();
  }

  // A node's subscriber holds all its channels again after a (re)connect.
  void node_up(const std::string& key) {
    auto it = nodes.find(key);
    if (stopped || it == nodes.end()) return;
    bool reconnect = it->second.was_up;
    it->second.was_up = true;
    for (const auto& ch : routes.on(key))
      if (moved.erase(ch) || reconnect) resubscribed(ch);
  }

  // A moved channel is confirmed on its new node: `resubscribed` (once).
  // Every coroutine holds `self` (a parameter: copied before it first runs).
  asio::awaitable<void> confirm(std::shared_ptr<state> self, std::string ch, std::string key,
                                std::shared_ptr<subscriber> sub) {
    (void)self;
    auto copy = ch;
    auto ec = co_await sub->subscribe(std::move(copy));
    if (stopped || routes.placed(ch) != key) co_return;
    if (ec) {
      log::warn("redis cluster: sharded channel {} not confirmed on {}: {}", ch, key, ec.message());
      want_refresh();
      co_return;
    }
    if (moved.erase(ch)) resubscribed(ch);
  }

  // --- the slot map ----------------------------------------------------------------------------
  // `previous`: when the map before this one was asked for. A channel that moved although
  // its old node still held it may have been published on the new owner since then.
  void apply(clock_type::time_point previous) {
    auto moves = routes.plan(*map);
    std::size_t placed = 0;
    for (auto& mv : moves) {
      if (!mv.from.empty()) {
        if (auto it = nodes.find(mv.from); it != nodes.end())
          it->second.sub->unsubscribe(mv.channel);
        moved.insert(mv.channel);
        mark_deaf(mv.channel, previous);
      }
      const auto* to = address_of(mv.to);
      routes.place(mv.channel, to ? mv.to : std::string());
      if (!to) continue;
      ++placed;
      auto sub = node_for(*to);
      asio::co_spawn(strand, confirm(shared_from_this(), mv.channel, mv.to, sub), asio::detached);
    }
    if (!moves.empty())
      log::info("redis cluster: {} sharded channels placed on their slot's master ({} unplaced)",
                placed, routes.unplaced());
    // Nodes that hold no channel and are no longer masters are let go.
    for (auto it = nodes.begin(); it != nodes.end();) {
      if (!address_of(it->first) && routes.on(it->first).empty()) {
        it->second.sub->stop();
        it = nodes.erase(it);
      } else {
        ++it;
      }
    }
  }

  asio::awaitable<void> load_and_apply(std::shared_ptr<state> self) {
    (void)self;
    auto asked = clock_type::now();
    last_refresh = asked;
    auto op = cluster->exec(command{"CLUSTER", "SLOTS"});
    auto res = co_await std::move(op);
    if (stopped) co_return;
    if (!res.ok()) {
      log::debug("redis cluster: CLUSTER SLOTS for the sharded subscriber failed: {}",
                 res.ec ? res.ec.message() : res.value.str);
      co_return;
    }
    auto m = slot_map::parse(res.value, node_address{opts.where.host, opts.where.port});
    if (!m || m->masters().empty()) co_return;
    map = std::move(*m);
    auto previous = map_asked == clock_type::time_point{} ? asked : map_asked;
    map_asked = asked;
    apply(previous);
  }

  // Reads the map and applies it; a caller that comes while a read runs waits for one more.
  asio::awaitable<void> refresh(std::shared_ptr<state> self) {
    if (refreshing) {
      again = true;
      auto t = std::make_shared<asio::steady_timer>(strand, clock_type::time_point::max());
      refresh_waiters.push_back(t);
      co_await t->async_wait(use_tuple);
      co_return;
    }
    refreshing = true;
    do {
      again = false;
      co_await load_and_apply(self);
    } while (again && !stopped);
    refreshing = false;
    auto waiters = std::move(refresh_waiters);
    refresh_waiters.clear();
    for (auto& t : waiters) t->cancel();
  }

  void want_refresh() {
    if (stopped) return;
    if (refreshing) {
      again = true;
      return;
    }
    asio::co_spawn(strand, refresh(shared_from_this()),
                   exit_on_exception("sharded subscriber map refresh"));
  }

  asio::awaitable<void> tick_loop(std::shared_ptr<state> self) {
    (void)self;
    while (!stopped) {
      ticker.expires_after(tick);
      co_await ticker.async_wait(use_tuple);
      if (stopped) break;
      auto since = clock_type::now() - last_refresh;
      bool down = false;
      for (const auto& [key, n] : nodes)
        if (!n.sub->connected() && !routes.on(key).empty()) down = true;
      bool unplaced = routes.unplaced() > 0;
      ready = map.has_value() && !unplaced && !down;
      if (refreshing) continue;
      if (since >= refresh_period || (!map && since >= unplaced_gap) ||
          (unplaced && since >= unplaced_gap) || (down && since >= node_down_gap))
        want_refresh();
    }
  }

  // --- the caller's requests -------------------------------------------------------------------
  asio::awaitable<std::error_code> do_subscribe(std::shared_ptr<state> self, std::string ch) {
    if (stopped) co_return error::stopped;
    routes.want(ch);
    auto deadline = clock_type::now() + opts.command_timeout;
    std::error_code last = error::timeout;
    int moves = 0;
    while (!stopped && clock_type::now() < deadline) {
      if (!routes.wants(ch)) co_return std::error_code{};  // unsubscribed meanwhile
      auto key = routes.placed(ch);
      if (key.empty() && map) {
        key = channel_routes::owner(*map, ch);
        if (!address_of(key)) key.clear();
        if (!key.empty()) {
          routes.place(ch, key);
          node_for(*address_of(key));
        }
      }
      if (key.empty()) {
        co_await refresh(self);
        if (routes.placed(ch).empty()) {
          asio::steady_timer pause(strand, unplaced_gap);
          co_await pause.async_wait(use_tuple);
        }
        continue;
      }
      auto it = nodes.find(key);
      if (it == nodes.end()) {
        routes.unplace(ch, key);
        continue;
      }
      auto sub = it->second.sub;
      auto copy = ch;
      auto ec = co_await sub->subscribe(std::move(copy));
      if (!ec) co_return ec;
      last = ec;
      if (ec != error::moved) break;
      if (++moves > 1) {
        // Refused again (a node that answers NOPERM or CLUSTERDOWN for a while during a
        // failover): not a map load per round trip.
        asio::steady_timer pause(strand, unplaced_gap);
        co_await pause.async_wait(use_tuple);
      }
      co_await refresh(self);  // the node gave it up: where is its slot now?
    }
    co_return stopped ? std::error_code(error::stopped) : last;
  }

  void do_unsubscribe(const std::string& ch) {
    moved.erase(ch);
    deaf.erase(ch);
    auto key = routes.drop(ch);
    if (auto it = nodes.find(key); it != nodes.end()) it->second.sub->unsubscribe(ch);
  }

  void do_start() {
    if (started || stopped) return;
    started = true;
    want_refresh();
    asio::co_spawn(strand, tick_loop(shared_from_this()),
                   exit_on_exception("sharded subscriber ticker"));
  }

  void do_stop() {
    if (stopped) return;
    stopped = true;
    ready = false;
    ticker.cancel();
    for (auto& [key, n] : nodes) n.sub->stop();
    nodes.clear();
    auto waiters = std::move(refresh_waiters);
    refresh_waiters.clear();
    for (auto& t : waiters) t->cancel();
  }
};

std::shared_ptr<sharded_subscriber> sharded_subscriber::create(asio::any_io_executor ex,
                                                               connection_options opts,
                                                               std::shared_ptr<connection> cluster,
                                                               message_fn on_message) {
  auto st = std::make_shared<state>(std::move(ex), std::move(opts), std::move(cluster),
                                    std::move(on_message));
  return std::shared_ptr<sharded_subscriber>(new sharded_subscriber(std::move(st)));
}

sharded_subscriber::~sharded_subscriber() {
  stop();
}

void sharded_subscriber::on_resubscribed(resumed_fn fn) {
  asio::post(state_->strand,
             [st = state_, fn = std::move(fn)]() mutable { st->on_resubscribed = std::move(fn); });
}

void sharded_subscriber::on_resubscribed(channel_fn fn) {
  on_resubscribed([fn = std::move(fn)](const std::string& ch, clock_type::time_point) { fn(ch); });
}

void sharded_subscriber::start() {
  asio::post(state_->strand, [st = state_] { st->do_start(); });
}

void sharded_subscriber::stop() {
  asio::post(state_->strand, [st = state_] { st->do_stop(); });
}

asio::awaitable<std::error_code> sharded_subscriber::subscribe(std::string channel) {
  auto st = state_;
  auto op =
      asio::co_spawn(st->strand, st->do_subscribe(st, std::move(channel)), asio::use_awaitable);
  auto ec = co_await std::move(op);
  co_return ec;
}

void sharded_subscriber::unsubscribe(std::string channel) {
  asio::post(state_->strand, [st = state_, ch = std::move(channel)] { st->do_unsubscribe(ch); });
}

bool sharded_subscriber::connected() const {
  return state_->ready;
}

}  // namespace pushonce::redis
