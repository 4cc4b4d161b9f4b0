#include "core/redis/subscriber.hpp"

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "core/log.hpp"
#include "core/redis/complete.hpp"
#include "core/redis/error.hpp"
#include "core/redis/link.hpp"
#include "core/redis/resp_stream.hpp"
#include "core/redis/subscription_set.hpp"
#include "core/use_tuple.hpp"

namespace pushonce::redis {

namespace asio = boost::asio;
using clock_type = link::clock_type;

namespace {}  // namespace

// The link carries out I/O; the subscription_set decides. Both live on the link's strand.
// A PING every third of the command timeout keeps the link honest: a server that stopped
// answering is noticed within the command timeout and the connection is rebuilt (messages
// in between are lost: callers catch up in on_connect).
struct subscriber::state : link::client {
  state(asio::any_io_executor ex, connection_options o, message_fn fn, bool sharded)
      : io(std::move(ex), o, "redis subscriber", *this),
        subs(sharded,
             [this](subscription_set::waiter&& w, std::error_code ec) {
               detail::complete(std::move(w), io.strand(), ec);
             }),
        on_message(std::move(fn)) {}

  link io;
  subscription_set subs;
  message_fn on_message;
  std::function<void(const std::string&)> on_dropped;
  std::function<void(const std::string&)> on_resubscribed;
  std::function<void(clock_type::time_point)> on_lost;
  clock_type::time_point last_read, last_ping;
  bool ping_due = false;

  void check_ready() {
    if (subs.take_ready()) io.notify_connected();
  }
  void changed() {
    check_ready();
    if (subs.has_commands()) io.wake();
  }

  void on_up() override {
    last_read = last_ping = clock_type::now();
    ping_due = false;
    subs.on_connected();
    check_ready();
  }
  bool on_reply(reply r) override {
    last_read = clock_type::now();
    if (auto m = subs.on_reply(r)) on_message(m->channel, std::move(m->payload));
    for (const auto& ch : subs.take_dropped())
      if (on_dropped) on_dropped(ch);
    if (subs.has_reports()) report_refusals();
    changed();
    return true;
  }
  void report_refusals() {
    for (const auto& r : subs.take_refusals())
      log::warn(
          "redis subscriber: {} refused to subscribe {} channel(s) (first {}): {}; "
          "retrying in {} ms",
          io.options().where.display(), r.channels.size(), r.channels.front(), r.error,
          r.retry_in.count());
    for (const auto& ch : subs.take_recovered()) {
      log::info("redis subscriber: channel {} subscribed after a refusal", ch);
      if (on_resubscribed) on_resubscribed(ch);
    }
  }
  void fill(std::string& out, std::size_t) override {
    for (const auto& cmd : subs.take_commands()) resp_stream::encode(cmd, out);
    if (ping_due) resp_stream::encode(command{"PING"}, out);
    ping_due = false;
  }
  void on_down() override {
    subs.on_disconnected();
    if (on_lost) on_lost(last_read);
  }
  bool on_tick(clock_type::time_point now) override {
    subs.expire(now);
    if (!io.connected()) return false;
    if (subs.has_commands()) io.wake();  // refused channels due for a retry
    auto period = io.options().command_timeout / 3;
    if (now - last_read > io.options().command_timeout) {
      log::warn("redis: subscriber link to {} silent; reconnecting", io.options().where.display());
      return true;
    }
    if (now - last_ping >= period) {
      last_ping = now;
      ping_due = true;
      io.wake();
    }
    return false;
  }
  void on_stopped() override { subs.close(error::stopped); }
};

std::shared_ptr<subscriber> subscriber::create(asio::any_io_executor ex, connection_options opts,
                                               message_fn on_message, bool sharded) {
  auto st = std::make_shared<state>(std::move(ex), std::move(opts), std::move(on_message), sharded);
  return std::shared_ptr<subscriber>(new subscriber(std::move(st)));
}

subscriber::subscriber(std::shared_ptr<state> st)
    : link_handle(st, st->io), state_(std::move(st)) {}

asio::awaitable<std::error_code> subscriber::subscribe(std::string channel) {
  auto st = state_;
  // Named locals only (GCC 12: docs/architecture.md "Coroutines and GCC 12").
  auto init = [st](auto handler, std::string ch) {
    asio::post(st->io.strand(), [st, ch = std::move(ch),
                                 h = subscription_set::waiter(std::move(handler))]() mutable {
      auto deadline = clock_type::now() + st->io.options().command_timeout;
      st->subs.subscribe(std::move(ch), std::move(h), deadline);
      st->changed();
    });
  };
  auto op = asio::async_initiate<decltype(use_tuple), void(std::error_code)>(init, use_tuple,
                                                                             std::move(channel));
  auto [ec] = co_await std::move(op);
  co_return ec;
}

void subscriber::on_dropped(std::function<void(const std::string&)> fn) {
  asio::post(state_->io.strand(),
             [st = state_, fn = std::move(fn)]() mutable { st->on_dropped = std::move(fn); });
}

void subscriber::on_resubscribed(std::function<void(const std::string&)> fn) {
  asio::post(state_->io.strand(),
             [st = state_, fn = std::move(fn)]() mutable { st->on_resubscribed = std::move(fn); });
}

void subscriber::on_lost(std::function<void(clock_type::time_point)> fn) {
  asio::post(state_->io.strand(),
             [st = state_, fn = std::move(fn)]() mutable { st->on_lost = std::move(fn); });
}

void subscriber::unsubscribe(std::string channel) {
  asio::post(state_->io.strand(), [st = state_, ch = std::move(channel)] {
    st->subs.unsubscribe(ch);
    st->changed();
  });
}

}  // namespace pushonce::redis
