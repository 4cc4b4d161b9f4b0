#include "leader/leader_daemon.hpp"

#include <fmt/ranges.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>

#include "core/exit_on_exception.hpp"
#include "core/heartbeat.hpp"
#include "core/log.hpp"
#include "core/lua/claim_record.hpp"
#include "core/lua/leader_lease.hpp"
#include "core/use_tuple.hpp"
#include "leader/leader_metrics.hpp"

namespace pushonce::leader {

namespace asio = boost::asio;

leader_daemon::leader_daemon(asio::any_io_executor ex, redis::connection_options redis, keys k,
                             daemon_options opts)
    : ex_(ex),
      keys_(k),
      opts_(std::move(opts)),
      conn_(redis::connection::create(ex, redis)),
      queues_(conn_, k, opts_.retention),
      lease_timer_(ex),
      lease_(opts_.lease, std::chrono::steady_clock::now()),
      assigner_(duties(), queues_),
      opener_(duties()),
      presence_(duties()),
      queue_check_(conn_, keys_, opts_.queues) {
  queues_.set_admission_record_time(opts_.admission_ttl + std::chrono::seconds(60));
  queues_.set_wait_replicas(opts_.wait_replicas, opts_.wait_timeout);
  sub_ = redis::subscriber::create(ex, redis, [this](const std::string& ch, std::string p) {
    asio::post(ex_, [this, ch, p = std::move(p)] { on_wake(ch, p); });
  });
}

duty_context leader_daemon::duties() {
  return duty_context{
      .ex = ex_,
      .conn = conn_,
      .k = keys_,
      .opts = opts_,
      .leading = [this] { return leading(); },
      .token = [this] { return lease_.token(); },
      .stopping = [this] { return stopping_; },
      .fenced = [this](const std::string& queue,
                       std::string_view why) { return fenced(queue, why); },
  };
}

void leader_daemon::start() {
  conn_->start();
  sub_->start();
  // After a reconnect wake messages may have been missed: look at every queue.
  sub_->on_connect([this] { asio::post(ex_, [this] { assigner_.wake_all(); }); });
  asio::co_spawn(
      ex_,
      [this]() -> asio::awaitable<void> {
        auto wake = keys_.wake_channel();
        auto released = keys_.plain("leader:released");
        co_await sub_->subscribe(std::move(wake));
        co_await sub_->subscribe(std::move(released));
      },
      exit_on_exception("leader subscriptions"));
  asio::co_spawn(ex_, lease_loop(), exit_on_exception("leader lease loop"));
  assigner_.start();  // the assign loop and the expire loop
  opener_.start();
  presence_.start();
}

void leader_daemon::on_wake(const std::string& channel, const std::string& payload) {
  if (channel == keys_.wake_channel()) {
    // "QUEUE" or a queue event "QUEUE SEQ KIND TICKET..." (lua/lib/prelude.lua).
    assigner_.wake(std::string_view(payload).substr(0, payload.find(' ')));
  } else if (!leading()) {
    lease_timer_.cancel();  // the lease was released: try to take it now
  }
}

namespace {
const char* mode_word(lease_call mode) {
  switch (mode) {
    case lease_call::acquire:
      return "acquire";
    case lease_call::renew:
      return "renew";
    case lease_call::release:
      return "release";
    case lease_call::advance:
      return "advance";
  }
  return "acquire";
}
}  // namespace

asio::awaitable<lease_reply> leader_daemon::call_lease(lease_call mode) {
  lua::leader_lease_inputs in{.lease_key = keys_.plain("leader"),
                              .counter = keys_.leader_fencing(conn_->is_cluster()),
                              .mode = mode_word(mode),
                              .id = opts_.id,
                              .pid = std::to_string(getpid()),
                              .host = heartbeat::hostname(),
                              .lease_ms = std::to_string(opts_.lease.count()),
                              .released = keys_.plain("leader:released"),
                              .above = {}};
  if (mode == lease_call::advance) in.above = std::to_string(lease_.refence_above());
  auto r = co_await lua::run_script(*conn_, std::move(in));
  co_return lease_reply::from(r);
}

// Carries out a lease decision (leader/lease_state.hpp decides).
void leader_daemon::apply(lease_action action) {
  switch (action) {
    case lease_action::lead:
      log::info("leading with fencing token {} (queues: {})", lease_.token(),
                fmt::join(opts_.queues, ", "));
      assigner_.wake_all();
      break;
    case lease_action::step_down:
      log::warn("no longer leading: {}", lease_.why());
      assigner_.forget_sources();
      presence_.forget();
      break;
    case lease_action::refence:
      // While this leader holds the lease no other leader acts: the fence is stale (e.g. a
      // failover lost the counter's last increments).
      log::warn(
          "fenced while holding the lease: a queue's fence ({}) is above our token {}; "
          "moving the fencing counter past it",
          lease_.refence_above(), lease_.token());
      lease_timer_.cancel();  // the advance call now
      break;
    case lease_action::give_up:
      log::warn("no longer leading: {}", lease_.why());
      assigner_.forget_sources();
      presence_.forget();
      lease_timer_.cancel();  // the release call now
      break;
    case lease_action::hold:
    case lease_action::standby:
      break;
  }
}

// The fence of `queue` is read to tell how far the fencing counter must move (the assign
// and expire scripts compare it with our token; lease_state decides).
asio::awaitable<void> leader_daemon::fenced(const std::string& queue, std::string_view why) {
  redis::command get{"GET", keys_.queue(queue, "fence")};
  auto r = co_await conn_->exec(std::move(get));
  std::optional<long long> stored;
  if (r.ok() && r.value.is_string()) stored = lua::record_number(r.value.str);
  apply(lease_.on_fenced(why, stored, std::chrono::steady_clock::now()));
}

// Renews every third of the lease; lease_state decides when to lead and step down.
asio::awaitable<void> leader_daemon::lease_loop() {
  while (!stopping_) {
    // Every leader, standbys included, registers its queues: users can join them from now on.
    if (!registered_) {
      auto reg = co_await queues_.register_queues(opts_.queues, opts_.accept_timeout.count());
      registered_ = reg.has_value();
      if (!registered_) log::warn("cannot register queues yet: {}", reg.error().message);
    }
    if (registered_) co_await queue_check_.run();
    if (stopping_) break;
    auto call = lease_.next_call();
    auto reply = co_await call_lease(call);
    if (stopping_) break;
    if (call == lease_call::release)
      lease_.on_released(std::chrono::steady_clock::now());
    else
      apply(lease_.on_reply(reply, std::chrono::steady_clock::now()));
    lease_timer_.expires_at(lease_.next_wake());
    co_await lease_timer_.async_wait(use_tuple);
  }
}

asio::awaitable<std::string> leader_daemon::metrics_text() {
  co_return co_await leader_metrics_text(
      *conn_, keys_, opts_,
      {.leading = leading(), .token = lease_.token(), .assigned = assigner_.assigned()});
}

asio::awaitable<void> leader_daemon::stop() {
  stopping_ = true;
  assigner_.interrupt();
  lease_timer_.cancel();
  if (lease_.on_stop()) {
    auto released = co_await call_lease(lease_call::release);
    log::info("lease {}", released.what == lease_reply::kind::token && released.token == 1
                              ? "released"
                              : "was no longer ours");
  }
  sub_->stop();
  conn_->stop();
}

}  // namespace pushonce::leader
