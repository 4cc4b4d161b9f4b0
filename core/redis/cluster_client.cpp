#include "core/redis/cluster_client.hpp"

#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cassert>
#include <deque>
#include <map>
#include <optional>
#include <vector>

#include "core/exit_on_exception.hpp"
#include "core/log.hpp"
#include "core/redis/cluster_retry.hpp"
#include "core/redis/command_keys.hpp"
#include "core/redis/complete.hpp"
#include "core/redis/connection.hpp"
#include "core/redis/error.hpp"
#include "core/redis/hash_slot.hpp"
#include "core/redis/slot_map.hpp"
#include "core/use_tuple.hpp"

namespace pushonce::redis {

namespace asio = boost::asio;

namespace {
using clock_type = std::chrono::steady_clock;
constexpr std::chrono::milliseconds refresh_period{5000};  // the map is read at least this often
constexpr std::chrono::milliseconds refresh_gap{100};      // and at most this often
constexpr std::chrono::milliseconds no_map_tick{50};       // pending commands' deadlines

command cluster_slots_command() {
  return {"CLUSTER", "SLOTS"};
}
command asking_command() {
  return {"ASKING"};
}
node_address address_of(const endpoint& e) {
  return {e.host, e.port};
}
}  // namespace

struct cluster_client::state : std::enable_shared_from_this<state> {
  struct request {
    request(command c, handler_type h, clock_type::time_point d)
        : cmd(std::move(c)), handler(std::move(h)), deadline(d), retry(d) {}
    request(request&&) = default;
    request& operator=(request&&) = delete;  // any_completion_handler's move-assign recurses
    command cmd;
    handler_type handler;
    clock_type::time_point deadline;
    cluster_retry retry;
    std::optional<unsigned> at_slot;  // initiate_at: this slot, not the command's keys'
  };

  state(asio::any_io_executor e, connection_options o)
      : ex(std::move(e)), strand(asio::make_strand(ex)), opts(std::move(o)), timer(strand) {}

  asio::any_io_executor ex;
  asio::strand<asio::any_io_executor> strand;
  connection_options opts;
  asio::steady_timer timer;
  std::map<std::string, std::shared_ptr<connection>> conns;  // by node_address::key()
  std::vector<std::shared_ptr<connection>> seeds;
  std::optional<slot_map> map;
  std::vector<std::shared_ptr<connection>> by_master;  // parallel to map->masters()
  std::deque<request> pending;                         // waiting for a map
  std::function<void()> on_connect;
  std::atomic<bool> ready{false};
  bool started = false, stopped = false, refresh_wanted = true, had_map = false;
  clock_type::time_point last_refresh{};

  // --- connections -------------------------------------------------------------------------
  std::shared_ptr<connection> conn_for(const node_address& a) {
    auto key = a.key();
    auto it = conns.find(key);
    if (it != conns.end()) return it->second;
    auto o = opts;
    o.cluster.clear();
    o.where.host = a.host;
    o.where.port = a.port;
    o.where.db = 0;
    auto c = connection::create(ex, std::move(o));
    c->start();
    conns.emplace(std::move(key), c);
    return c;
  }

  void sync_masters() {
    by_master.clear();
    if (!map) return;
    for (const auto& m : map->masters()) by_master.push_back(conn_for(m));
  }

  // --- routing -------------------------------------------------------------------------------
  void route(request r) {
    if (stopped) return finish(std::move(r.handler), error::stopped, reply{});
    assert(!spans_slots(r.cmd) && "a command whose keys hash to different cluster slots");
    if (!map) {
      pending.push_back(std::move(r));
      want_refresh();
      return;
    }
    auto where = r.at_slot ? command_route{command_route::kind::slot, *r.at_slot} : route_of(r.cmd);
    if (where.where == command_route::kind::all) return broadcast(std::move(r));
    std::shared_ptr<connection> c;
    if (where.where == command_route::kind::any) {
      for (auto& m : by_master)
        if (m->connected()) c = m;
      if (!c && !by_master.empty()) c = by_master.front();
    } else if (int i = map->owner_index(where.slot); i >= 0) {
      c = by_master[static_cast<std::size_t>(i)];
    }
    // Nobody serves the slot, or its master's connection is down (the master died and its
    // replica is being promoted): read the map again and wait for it (bounded by the
    // command's deadline), instead of queueing behind a connection that may never come
    // back. The map is read every refresh_gap while commands wait, so they go to the
    // promoted replica as soon as the cluster names it.
    if (!c || !c->connected()) {
      pending.push_back(std::move(r));
      want_refresh();
      return;
    }
    send(c, std::move(r));
  }

  void send(const std::shared_ptr<connection>& c, request r) {
    command words = r.cmd;  // kept in `r` for a resend
    c->async_exec(std::move(words), [self = shared_from_this(), r = std::move(r)](
                                        std::error_code ec, reply rep) mutable {
      // Runs on the node's strand. The common case completes the caller from here.
      if (!ec && !rep.is_error()) {
        self->finish(std::move(r.handler), ec, std::move(rep));
        return;
      }
      asio::post(self->strand, [self, r = std::move(r), ec, rep = std::move(rep)]() mutable {
        self->on_answer(std::move(r), ec, std::move(rep));
      });
    });
  }

  void on_answer(request r, std::error_code ec, reply rep) {
    auto step = r.retry.next(ec, rep, clock_type::now());
    if (step.refresh) want_refresh();
    if (stopped) step.what = cluster_retry::action::complete;
    switch (step.what) {
      case cluster_retry::action::complete:
        return finish(std::move(r.handler), ec, std::move(rep));
      case cluster_retry::action::follow_moved: {
        if (map) {
          map->assign(step.to->slot, step.to->to);
          sync_masters();
        }
        return send(conn_for(step.to->to), std::move(r));
      }
      case cluster_retry::action::follow_ask: {
        auto c = conn_for(step.to->to);
        // ASKING applies to the next command on the connection: both are pushed from this
        // strand one after the other, so nothing comes between them in that pipeline.
        c->async_exec(asking_command(), [](std::error_code, reply) {});
        return send(c, std::move(r));
      }
      case cluster_retry::action::wait_and_resend: {
        auto t = std::make_shared<asio::steady_timer>(strand, step.wait);
        t->async_wait([self = shared_from_this(), t, r = std::move(r)](auto) mutable {
          self->route(std::move(r));
        });
        return;
      }
    }
  }

  // SCRIPT / FUNCTION go to every master; the caller gets the first error, else the first
  // master's reply.
  void broadcast(request r) {
    struct gather {
      handler_type handler;
      std::size_t left = 0;
      std::optional<result> first, error;
    };
    auto g = std::make_shared<gather>();
    detail::assign(g->handler, std::move(r.handler));
    g->left = by_master.size();
    for (auto& c : by_master) {
      command words = r.cmd;
      c->async_exec(std::move(words),
                    asio::bind_executor(
                        strand, [self = shared_from_this(), g](std::error_code ec, reply rep) {
                          result res{ec, std::move(rep)};
                          if (!res.ok() && !g->error) g->error = res;
                          if (!g->first) g->first = res;
                          if (--g->left != 0) return;
                          auto& out = g->error ? *g->error : *g->first;
                          self->finish(std::move(g->handler), out.ec, std::move(out.value));
                        }));
    }
    if (by_master.empty()) finish(std::move(g->handler), error::disconnected, reply{});
  }

  void finish(handler_type&& h, std::error_code ec, reply&& rep) {
    detail::complete(std::move(h), strand, ec, std::move(rep));
  }

  // --- the slot map -------------------------------------------------------------------------
  void want_refresh() {
    if (refresh_wanted) return;
    refresh_wanted = true;
    timer.cancel();
  }

  asio::awaitable<bool> load_map() {
    std::vector<std::shared_ptr<connection>> ask;
    for (auto& c : by_master)
      if (c->connected()) ask.push_back(c);
    for (auto& c : seeds)
      if (c->connected()) ask.push_back(c);
    for (auto& c : ask) {
      auto op = c->exec(cluster_slots_command());
      auto res = co_await std::move(op);
      if (stopped) co_return false;
      if (!res.ok()) continue;
      auto m = slot_map::parse(res.value, address_of(c->options().where));
      if (!m || m->masters().empty()) continue;
      if (!map || !(*map == *m))
        log::info("redis cluster: slot map read from {}: {} masters{}",
                  c->options().where.display(), m->masters().size(),
                  m->unserved() ? fmt::format(", {} slots unserved", m->unserved()) : "");
      map = std::move(*m);
      sync_masters();
      co_return true;
    }
    co_return false;
  }

  void expire_pending(clock_type::time_point now) {
    std::deque<request> keep;
    while (!pending.empty()) {
      request r = std::move(pending.front());
      pending.pop_front();
      if (now >= r.deadline || stopped)
        finish(std::move(r.handler), stopped ? error::stopped : error::timeout, reply{});
      else
        keep.push_back(std::move(r));
    }
    pending.swap(keep);
  }

  void flush_pending() {
    std::deque<request> now;
    now.swap(pending);
    while (!now.empty()) {
      request r = std::move(now.front());
      now.pop_front();
      route(std::move(r));
    }
  }

  asio::awaitable<void> refresher(std::shared_ptr<state> self) {
    while (!stopped) {
      auto since = clock_type::now() - last_refresh;
      clock_type::duration wait = refresh_wanted ? refresh_gap - since : refresh_period - since;
      if (!pending.empty() || !map) wait = std::min<clock_type::duration>(wait, no_map_tick);
      if (wait > clock_type::duration::zero()) {
        timer.expires_after(wait);
        co_await timer.async_wait(use_tuple);
        if (stopped) break;
        since = clock_type::now() - last_refresh;
        if (since < (refresh_wanted ? refresh_gap : refresh_period)) {
          expire_pending(clock_type::now());
          continue;
        }
      }
      refresh_wanted = false;
      last_refresh = clock_type::now();
      bool ok = co_await load_map();
      if (stopped) break;
      if (!ok) refresh_wanted = true;  // try again after the gap
      ready = ok;
      if (ok && !had_map && on_connect) on_connect();
      had_map = ok;
      expire_pending(clock_type::now());
      if (map) flush_pending();
    }
    (void)self;
  }

  void do_start() {
    if (started || stopped) return;
    started = true;
    for (const auto& seed : opts.cluster) seeds.push_back(conn_for(address_of(seed)));
    asio::co_spawn(strand, refresher(shared_from_this()), exit_on_exception("cluster map refresh"));
  }

  void do_stop() {
    if (stopped) return;
    stopped = true;
    ready = false;
    timer.cancel();
    for (auto& [key, c] : conns) c->stop();
    expire_pending(clock_type::now());
  }
};

std::shared_ptr<cluster_client> cluster_client::create(asio::any_io_executor ex,
                                                       connection_options opts) {
  auto st = std::make_shared<state>(std::move(ex), std::move(opts));
  return std::shared_ptr<cluster_client>(new cluster_client(std::move(st)));
}

cluster_client::~cluster_client() {
  stop();
}

void cluster_client::start() {
  asio::post(state_->strand, [st = state_] { st->do_start(); });
}

void cluster_client::stop() {
  asio::post(state_->strand, [st = state_] { st->do_stop(); });
}

void cluster_client::on_connect(std::function<void()> fn) {
  asio::post(state_->strand,
             [st = state_, fn = std::move(fn)]() mutable { st->on_connect = std::move(fn); });
}

bool cluster_client::connected() const {
  return state_->ready;
}

const connection_options& cluster_client::options() const {
  return state_->opts;
}

void cluster_client::initiate(command cmd, handler_type handler) {
  auto deadline = clock_type::now() + state_->opts.command_timeout;
  asio::post(state_->strand,
             [st = state_, c = std::move(cmd), h = std::move(handler), deadline]() mutable {
               st->route(state::request(std::move(c), std::move(h), deadline));
             });
}

void cluster_client::initiate_at(std::string_view route_key, command cmd, handler_type handler) {
  auto deadline = clock_type::now() + state_->opts.command_timeout;
  asio::post(state_->strand, [st = state_, c = std::move(cmd), h = std::move(handler), deadline,
                              slot = hash_slot(route_key)]() mutable {
    state::request r(std::move(c), std::move(h), deadline);
    r.at_slot = slot;
    st->route(std::move(r));
  });
}

}  // namespace pushonce::redis
