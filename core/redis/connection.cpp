#include "core/redis/connection.hpp"

#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/system_executor.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "core/log.hpp"
#include "core/redis/cluster_client.hpp"
#include "core/redis/complete.hpp"
#include "core/redis/error.hpp"
#include "core/redis/error_reply.hpp"
#include "core/redis/link.hpp"
#include "core/redis/link_handle.hpp"
#include "core/redis/request_queue.hpp"
#include "core/use_tuple.hpp"

namespace pushonce::redis {

namespace asio = boost::asio;

namespace {}  // namespace

// The link carries out I/O; the request_queue decides. Both live on the link's strand.
struct connection::state : link::client {
  state(asio::any_io_executor ex, connection_options o)
      : io(std::move(ex), o, "redis", *this),
        queue(o.max_queued, o.command_timeout,
              [this](request_queue::handler_type&& h, std::error_code ec, reply&& r) {
                detail::complete(std::move(h), io.strand(), ec, std::move(r));
              }) {}

  link io;
  request_queue queue;

  void on_up() override {
    failed_over = false;
    queue.set_note({});
    io.notify_connected();
  }
  bool on_reply(reply r) override {
    auto what = r.is_error() ? classify_error_code(r.error_code()) : error_reply_class::ordinary;
    if (what == error_reply_class::ordinary) return queue.on_reply(std::move(r));
    std::string code(r.error_code());
    if (!queue.on_reply(std::move(r))) return false;
    on_refusal(code, what);
    return true;
  }
  void fill(std::string& out, std::size_t max_bytes) override { queue.write_into(out, max_bytes); }
  void on_down() override { queue.on_disconnect(); }
  // A command that waited its whole timeout *in flight* means the server stopped
  // answering: the connection is dropped so that it reconnects.
  bool on_tick(link::clock_type::time_point now) override {
    bool stuck = queue.expire(now);
    if (stuck && io.connected())
      log::warn("redis: {} did not answer in {} ms; reconnecting", io.options().where.display(),
                io.options().command_timeout.count());
    return stuck;
  }
  void on_stopped() override { queue.close(error::stopped); }
  void on_connect_failed(std::error_code ec, const std::string& why) override {
    queue.set_note(why);
    if (ec == error::login_refused && io.options().fail_on_login_refusal)
      queue.close(error::login_refused);
  }

  // READONLY/LOADING/MASTERDOWN: the connection is dropped so that the next one finds the
  // new master. OOM/BUSY/MISCONF/NOREPLICAS/NOPERM: the command fails as redis_unavailable
  // (core/outcome); the log says which, at most once a second per connection (NOPERM as
  // an error: an operator must fix the ACL).
  void on_refusal(const std::string& code, error_reply_class what) {
    auto now = link::clock_type::now();
    if (what == error_reply_class::failover) {
      if (failed_over) return;  // the replies still buffered say the same
      failed_over = true;
      log::warn("redis: {} answered {} ({}); reconnecting", io.options().where.display(), code,
                describe_error_code(code));
      io.drop();
      return;
    }
    ++refusals;
    if (now - last_refusal_log < std::chrono::seconds(1)) return;
    if (what == error_reply_class::denied)
      log::error(
          "redis: {} answered {} ({}): {} command(s) refused, answered as unavailable; "
          "operator error: fix the Redis user's ACL",
          io.options().where.display(), code, describe_error_code(code), refusals);
    else
      log::warn("redis: {} answered {} ({}): {} command(s) refused, answered as unavailable",
                io.options().where.display(), code, describe_error_code(code), refusals);
    refusals = 0;
    last_refusal_log = now;
  }
  link::clock_type::time_point last_refusal_log{};
  std::size_t refusals = 0;
  bool failed_over = false;

  void push(command cmd, handler_type h) {
    if (queue.push(std::move(cmd), std::move(h), link::clock_type::now())) io.wake();
  }
};

// The start/stop controls of a single-node connection (link_handle's are protected).
struct connection::handle : link_handle {
  handle(std::shared_ptr<void> owner, link& io) : link_handle(std::move(owner), io) {}
};

std::shared_ptr<connection> connection::create(asio::any_io_executor ex, connection_options opts) {
  if (!opts.cluster.empty()) {
    auto cl = cluster_client::create(std::move(ex), std::move(opts));
    return std::shared_ptr<connection>(new connection(std::move(cl)));
  }
  auto st = std::make_shared<state>(std::move(ex), std::move(opts));
  return std::shared_ptr<connection>(new connection(std::move(st)));
}

connection::connection(std::shared_ptr<state> st)
    : state_(std::move(st)), handle_(std::make_unique<handle>(state_, state_->io)) {}

connection::connection(std::shared_ptr<cluster_client> cluster) : cluster_(std::move(cluster)) {}

connection::~connection() {
  if (cluster_) cluster_->stop();
}

void connection::start() {
  if (cluster_) return cluster_->start();
  handle_->start();
}

void connection::stop() {
  if (cluster_) return cluster_->stop();
  handle_->stop();
}

void connection::on_connect(std::function<void()> fn) {
  if (cluster_) return cluster_->on_connect(std::move(fn));
  handle_->on_connect(std::move(fn));
}

bool connection::connected() const {
  return cluster_ ? cluster_->connected() : handle_->connected();
}

const connection_options& connection::options() const {
  return cluster_ ? cluster_->options() : handle_->options();
}

void connection::initiate(command cmd, handler_type handler) {
  if (cluster_) return cluster_->initiate(std::move(cmd), std::move(handler));
  asio::post(state_->io.strand(),
             [st = state_, c = std::move(cmd), h = std::move(handler)]() mutable {
               st->push(std::move(c), std::move(h));
             });
}

asio::awaitable<result> connection::exec(command cmd) {
  auto op = async_exec(std::move(cmd), use_tuple);
  auto [ec, r] = co_await std::move(op);
  co_return result{ec, std::move(r)};
}

asio::awaitable<result> connection::exec_at(std::string route_key, command cmd) {
  std::vector<std::string> keys{std::move(route_key)};
  std::vector<command> cmds{std::move(cmd)};
  auto rs = co_await exec_all_at(std::move(keys), std::move(cmds));
  co_return std::move(rs.front());
}

// One handler for a pipeline: each command's slot is filled as its reply arrives; the
// last one completes the caller.
struct connection::batch_initiation {
  std::shared_ptr<state> st;
  std::shared_ptr<cluster_client> cluster;
  std::shared_ptr<std::vector<command>> cmds;
  std::shared_ptr<std::vector<std::string>> route_keys = {};  // exec_all_at (a cluster)
  void operator()(asio::any_completion_handler<void(std::vector<result>)> handler) const;
};

namespace {
struct batch {
  std::vector<result> results;
  std::size_t remaining = 0;
  asio::any_completion_handler<void(std::vector<result>)> handler;
};
}  // namespace

asio::awaitable<std::vector<result>> connection::exec_all(std::vector<command> cmds) {
  if (cmds.empty()) co_return std::vector<result>{};
  // The initiation and the awaitable are named locals
  // (GCC 12: docs/architecture.md "Coroutines and GCC 12").
  batch_initiation init{state_, cluster_, std::make_shared<std::vector<command>>(std::move(cmds))};
  auto op = asio::async_initiate<decltype(asio::use_awaitable), void(std::vector<result>)>(
      std::move(init), asio::use_awaitable);
  std::vector<result> out = co_await std::move(op);
  co_return out;
}

asio::awaitable<std::vector<result>> connection::exec_all_at(std::vector<std::string> route_keys,
                                                             std::vector<command> cmds) {
  if (!cluster_ || route_keys.size() != cmds.size()) {
    auto rs = co_await exec_all(std::move(cmds));
    co_return rs;
  }
  if (cmds.empty()) co_return std::vector<result>{};
  batch_initiation init{state_, cluster_, std::make_shared<std::vector<command>>(std::move(cmds)),
                        std::make_shared<std::vector<std::string>>(std::move(route_keys))};
  auto op = asio::async_initiate<decltype(asio::use_awaitable), void(std::vector<result>)>(
      std::move(init), asio::use_awaitable);
  std::vector<result> out = co_await std::move(op);
  co_return out;
}

void connection::batch_initiation::operator()(
    asio::any_completion_handler<void(std::vector<result>)> handler) const {
  auto g = std::make_shared<batch>();
  g->results.resize(cmds->size());
  g->remaining = cmds->size();
  detail::assign(g->handler, std::move(handler));
  if (cluster) {  // each command routed on its own; the last reply completes the caller
    // Replies come from several nodes' strands: the count is atomic.
    auto left = std::make_shared<std::atomic<std::size_t>>(cmds->size());
    for (std::size_t i = 0; i < cmds->size(); ++i) {
      auto slot = [g, i, left](std::error_code ec, reply r) {
        g->results[i] = result{ec, std::move(r)};
        if (left->fetch_sub(1, std::memory_order_acq_rel) == 1) {
          auto h = std::move(g->handler);
          detail::complete(std::move(h), asio::system_executor(), std::move(g->results));
        }
      };
      if (route_keys)
        cluster->initiate_at((*route_keys)[i], std::move((*cmds)[i]),
                             handler_type(std::move(slot)));
      else
        cluster->initiate(std::move((*cmds)[i]), handler_type(std::move(slot)));
    }
    return;
  }
  asio::post(st->io.strand(), [st = st, cmds = cmds, g]() {
    const auto& strand = st->io.strand();
    for (std::size_t i = 0; i < cmds->size(); ++i) {
      auto slot = [g, i, strand](std::error_code ec, reply r) {
        g->results[i] = result{ec, std::move(r)};
        if (--g->remaining == 0) {
          auto h = std::move(g->handler);
          detail::complete(std::move(h), strand, std::move(g->results));
        }
      };
      st->queue.push(std::move((*cmds)[i]), handler_type(std::move(slot)), link::clock_type::now());
    }
    st->io.wake();
  });
}

}  // namespace pushonce::redis
