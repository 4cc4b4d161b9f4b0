#include "core/redis/subscriber.hpp"

#include <atomic>
#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/append.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <deque>
#include <map>
#include <set>

#include "core/backoff.hpp"
#include "core/log.hpp"
#include "core/redis/complete.hpp"
#include "core/redis/error.hpp"
#include "core/redis/resp_stream.hpp"

namespace pushonce::redis {

namespace asio = boost::asio;
using namespace asio::experimental::awaitable_operators;
using clock_type = std::chrono::steady_clock;

namespace {
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
constexpr std::size_t channels_per_command = 512;
}  // namespace

// One strand. `wanted` is the set of channels the user asked for; `sent[ch]` counts
// SUBSCRIBE commands whose confirmation has not arrived, so a waiter completes only when
// the last SUBSCRIBE it could depend on is confirmed (an UNSUBSCRIBE may sit in between).
struct subscriber::state : std::enable_shared_from_this<subscriber::state> {
  using waiter = asio::any_completion_handler<void(std::error_code)>;
  struct waiter_entry {
    waiter handler;
    std::shared_ptr<asio::steady_timer> timer;
  };

  state(asio::any_io_executor ex, connection_options o, message_fn fn, bool sh)
      : strand(asio::make_strand(ex)),
        stream(strand),
        opts(std::move(o)),
        on_message(std::move(fn)),
        sharded(sh),
        wake(strand),
        pause(strand),
        retry(opts.backoff_initial, opts.backoff_max) {}

  asio::strand<asio::any_io_executor> strand;
  resp_stream stream;
  connection_options opts;
  message_fn on_message;
  bool sharded;
  asio::steady_timer wake;
  asio::steady_timer pause;  // backoff between connection attempts (stop() cancels it)
  backoff retry;
  std::set<std::string> wanted;
  std::map<std::string, int> sent;
  std::multimap<std::string, waiter_entry> waiters;
  std::deque<std::string> outbox;       // encoded commands to write
  std::set<std::string> resubscribing;  // confirmations still due before on_connect
  clock_type::time_point last_read;
  std::atomic<bool> connected{false};
  bool stopped = false, started = false;
  std::function<void()> on_connect;

  const char* sub_word() const { return sharded ? "SSUBSCRIBE" : "SUBSCRIBE"; }
  const char* unsub_word() const { return sharded ? "SUNSUBSCRIBE" : "UNSUBSCRIBE"; }

  void send(command cmd) {
    std::string wire;
    resp_stream::encode(cmd, wire);
    outbox.push_back(std::move(wire));
    wake.cancel();
  }

  void complete_waiters(const std::string& ch, std::error_code ec) {
    auto [b, e] = waiters.equal_range(ch);
    for (auto it = b; it != e; ++it) {
      it->second.timer->cancel();
      auto h = std::move(it->second.handler);
      detail::complete(std::move(h), strand, ec);
    }
    waiters.erase(b, e);
  }

  void add_channel(std::string ch, waiter h) {
    bool fresh = wanted.insert(ch).second;
    if (!fresh && !sent.count(ch) && connected) {
      return detail::complete(std::move(h), strand, std::error_code{});
    }
    auto timer = std::make_shared<asio::steady_timer>(strand, opts.command_timeout);
    waiters.emplace(ch, waiter_entry{std::move(h), timer});
    timer->async_wait([self = shared_from_this(), ch, timer](std::error_code ec) {
      if (ec) return;  // cancelled: confirmed
      auto [b, e] = self->waiters.equal_range(ch);
      for (auto it = b; it != e; ++it) {
        if (it->second.timer != timer) continue;
        auto h = std::move(it->second.handler);
        self->waiters.erase(it);
        detail::complete(std::move(h), self->strand, std::error_code(error::timeout));
        break;
      }
    });
    if (fresh && connected) {
      ++sent[ch];
      send({sub_word(), ch});
    }
  }

  void remove_channel(const std::string& ch) {
    if (!wanted.erase(ch)) return;
    if (resubscribing.erase(ch) && resubscribing.empty() && on_connect) on_connect();
    if (connected) send({unsub_word(), ch});
  }

  void handle(reply& r) {
    if (!r.is_array() || r.elements.size() < 2) return;
    const auto& kind = r.elements[0].str;
    const auto& ch = r.elements[1].str;
    if ((kind == "message" || kind == "smessage") && r.elements.size() >= 3) {
      if (wanted.count(ch)) on_message(ch, std::move(r.elements[2].str));
    } else if (kind == "subscribe" || kind == "ssubscribe") {
      auto it = sent.find(ch);
      if (it != sent.end() && --it->second <= 0) {
        sent.erase(it);
        complete_waiters(ch, {});
      }
      if (resubscribing.erase(ch) && resubscribing.empty() && on_connect) on_connect();
    }
  }

  void resubscribe_all() {
    sent.clear();
    resubscribing = wanted;
    std::vector<std::string> all(wanted.begin(), wanted.end());
    for (std::size_t i = 0; i < all.size(); i += channels_per_command) {
      command cmd{sub_word()};
      for (std::size_t j = i; j < std::min(all.size(), i + channels_per_command); ++j) {
        cmd.push_back(all[j]);
        ++sent[all[j]];
      }
      send(std::move(cmd));
    }
    if (resubscribing.empty() && on_connect) on_connect();
  }

  asio::awaitable<void> writer() {
    std::string buf;
    for (;;) {
      if (outbox.empty()) {
        wake.expires_at(clock_type::time_point::max());
        co_await wake.async_wait(use_tuple);
        if (stopped) co_return;
        continue;
      }
      buf.clear();
      while (!outbox.empty()) {
        buf.append(outbox.front());
        outbox.pop_front();
      }
      auto [ec, n] = co_await asio::async_write(stream.socket(), asio::buffer(buf), use_tuple);
      if (ec) co_return;
    }
  }

  asio::awaitable<void> reader() {
    for (;;) {
      reply r;
      if (auto ec = co_await stream.read(r)) co_return;
      last_read = clock_type::now();
      handle(r);
    }
  }

  // PING keeps the link honest: a server that stopped answering is noticed within the
  // command timeout and the connection is rebuilt (messages in between are lost: callers
  // catch up in on_connect).
  asio::awaitable<void> health() {
    asio::steady_timer t(strand);
    for (;;) {
      t.expires_after(opts.command_timeout / 3);
      auto [ec] = co_await t.async_wait(use_tuple);
      if (ec || stopped) co_return;
      if (clock_type::now() - last_read > opts.command_timeout) {
        log::warn("redis: subscriber link to {} silent; reconnecting", opts.where.display());
        co_return;
      }
      send({"PING"});
    }
  }

  asio::awaitable<void> run() {
    auto self = shared_from_this();
    bool was_down = false;
    while (!stopped) {
      auto ec = co_await stream.connect(opts);
      if (stopped) break;
      if (ec) {
        auto delay = retry.next();
        if (!was_down || retry.attempts() % 20 == 1)
          log::warn("redis: subscriber cannot connect to {}: {}; retrying in {} ms",
                    opts.where.display(), ec.message(), delay.count());
        was_down = true;
        pause.expires_after(delay);
        co_await pause.async_wait(use_tuple);
        continue;
      }
      if (was_down) log::info("redis: subscriber connected to {}", opts.where.display());
      was_down = false;
      retry.reset();
      connected = true;
      last_read = clock_type::now();
      outbox.clear();
      resubscribe_all();
      co_await (reader() || writer() || health());
      connected = false;
      stream.close();
      if (stopped) break;
      was_down = true;
      log::warn("redis: subscriber connection to {} lost; reconnecting", opts.where.display());
      pause.expires_after(retry.next());
      co_await pause.async_wait(use_tuple);
    }
    for (auto& [ch, w] : waiters) {
      w.timer->cancel();
      detail::complete(std::move(w.handler), strand, std::error_code(error::stopped));
    }
    waiters.clear();
  }
};

std::shared_ptr<subscriber> subscriber::create(asio::any_io_executor ex, connection_options opts,
                                               message_fn on_message, bool sharded) {
  return std::shared_ptr<subscriber>(
      new subscriber(std::move(ex), std::move(opts), std::move(on_message), sharded));
}

subscriber::subscriber(asio::any_io_executor ex, connection_options opts, message_fn on_message,
                       bool sharded)
    : state_(std::make_shared<state>(std::move(ex), std::move(opts), std::move(on_message),
                                     sharded)) {}

subscriber::~subscriber() {
  stop();
}

void subscriber::start() {
  asio::post(state_->strand, [st = state_] {
    if (st->started || st->stopped) return;
    st->started = true;
    asio::co_spawn(
        st->strand, [st] { return st->run(); }, asio::detached);
  });
}

void subscriber::stop() {
  asio::post(state_->strand, [st = state_] {
    if (st->stopped) return;
    st->stopped = true;
    st->wake.cancel();
    st->pause.cancel();  // a stop during the backoff must not wait for it to end
    st->stream.close();
  });
}

void subscriber::on_connect(std::function<void()> fn) {
  asio::post(state_->strand,
             [st = state_, fn = std::move(fn)]() mutable { st->on_connect = std::move(fn); });
}

asio::awaitable<std::error_code> subscriber::subscribe(std::string channel) {
  auto st = state_;
  // Named locals only: GCC 12 destroys temporaries in a co_await operand twice.
  auto init = [st](auto handler, std::string ch) {
    asio::post(
        st->strand, [st, ch = std::move(ch), h = state::waiter(std::move(handler))]() mutable {
          if (st->stopped)
            return detail::complete(std::move(h), st->strand, std::error_code(error::stopped));
          st->add_channel(std::move(ch), std::move(h));
        });
  };
  auto op = asio::async_initiate<decltype(use_tuple), void(std::error_code)>(init, use_tuple,
                                                                             std::move(channel));
  auto [ec] = co_await std::move(op);
  co_return ec;
}

void subscriber::unsubscribe(std::string channel) {
  asio::post(state_->strand, [st = state_, ch = std::move(channel)] { st->remove_channel(ch); });
}

bool subscriber::connected() const {
  return state_->connected;
}

}  // namespace pushonce::redis
