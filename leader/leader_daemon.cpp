#include "leader/leader_daemon.hpp"

#include <openssl/rand.h>
#include <unistd.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cstdlib>

#include "core/exit_on_exception.hpp"
#include "core/heartbeat.hpp"
#include "core/log.hpp"
#include "core/lua/claim_record.hpp"
#include "core/lua/leader_lease.hpp"
#include "core/lua/opening.hpp"
#include "core/lua/presence.hpp"
#include "core/metrics_text.hpp"
#include "core/queue_settings.hpp"
#include "core/redis/scripts.hpp"
#include "core/trace.hpp"
#include "core/use_tuple.hpp"
#include "leader/opening_plan.hpp"
#include "leader/queue_list.hpp"

namespace pushonce::leader {

namespace asio = boost::asio;

leader_daemon::leader_daemon(asio::any_io_executor ex, redis::connection_options redis, keys k,
                             daemon_options opts)
    : ex_(ex),
      keys_(k),
      opts_(std::move(opts)),
      conn_(redis::connection::create(ex, redis)),
      queues_(conn_, k, opts_.retention),
      wake_timer_(ex),
      lease_timer_(ex),
      lease_(opts_.lease, std::chrono::steady_clock::now()) {
  queues_.set_admission_record_time(opts_.admission_ttl + std::chrono::seconds(60));
  sub_ = redis::subscriber::create(ex, redis, [this](const std::string& ch, std::string p) {
    asio::post(ex_, [this, ch, p = std::move(p)] { on_wake(ch, p); });
  });
}

void leader_daemon::start() {
  conn_->start();
  sub_->start();
  // After a reconnect wake messages may have been missed: look at every queue.
  sub_->on_connect([this] {
    asio::post(ex_, [this] {
      dirty_.insert(opts_.queues.begin(), opts_.queues.end());
      wake_timer_.cancel();
    });
  });
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
  asio::co_spawn(ex_, assign_loop(), exit_on_exception("leader assign loop"));
  asio::co_spawn(ex_, expire_loop(), exit_on_exception("leader expire loop"));
  asio::co_spawn(ex_, opening_loop(), exit_on_exception("leader opening loop"));
  asio::co_spawn(ex_, presence_loop(), exit_on_exception("leader presence loop"));
}

void leader_daemon::on_wake(const std::string& channel, const std::string& payload) {
  if (channel == keys_.wake_channel()) {
    // "QUEUE" or a queue event "QUEUE SEQ KIND TICKET..." (lua/lib/prelude.lua).
    auto queue = std::string_view(payload).substr(0, payload.find(' '));
    for (auto& q : opts_.queues)
      if (q == queue) dirty_.insert(q);
    wake_timer_.cancel();
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
      dirty_.insert(opts_.queues.begin(), opts_.queues.end());
      wake_timer_.cancel();
      break;
    case lease_action::step_down:
      log::warn("no longer leading: {}", lease_.why());
      sources_.clear();
      abandon_.reset();
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
      sources_.clear();
      abandon_.reset();
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
    co_await check_queue_list();
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

// Every third of a lease: does the namespace have a queue this leader would not serve?
asio::awaitable<void> leader_daemon::check_queue_list() {
  if (!registered_ || !on_queue_conflict_) co_return;
  redis::command cmd{"SMEMBERS", keys_.plain("queues")};
  auto r = co_await conn_->exec(std::move(cmd));
  if (!r.ok() || r.value.elements.empty()) co_return;  // Redis away: the next round checks
  std::vector<std::string> registered;
  for (auto& e : r.value.elements) registered.push_back(e.str);
  auto missing = queues_missing_from(opts_.queues, std::move(registered));
  if (missing.empty()) co_return;
  auto fn = std::move(on_queue_conflict_);
  on_queue_conflict_ = nullptr;
  fn(queue_conflict_message(missing, opts_.queues, keys_.plain("queues")));
}

asio::awaitable<std::string> leader_daemon::metrics_text() {
  const std::string own = "leader=\"" + metric_label_value(opts_.id) + "\"";
  std::string out;
  out += metric_text("pushonce_leader_active", "gauge",
                     "1 while this leader holds the lease (assigns), 0 while it stands by.", own,
                     leading() ? 1 : 0);
  out += metric_text("pushonce_leader_fencing_token", "gauge",
                     "The fencing token of this leader's lease (0 while it stands by).", own,
                     static_cast<double>(lease_.token()));
  out += metric_text("pushonce_leader_assignments_total", "counter",
                     "Assignments this leader made since it started.", own,
                     static_cast<double>(assigned_));
  if (!leading()) co_return out;
  const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  const auto since = std::to_string(now - 3000);
  std::vector<redis::command> cmds{{"HGETALL", keys_.plain("stats")},
                                   {"ZCOUNT", keys_.plain("workers"), since, "+inf"},
                                   {"ZCOUNT", keys_.plain("gateways"), since, "+inf"},
                                   {"XLEN", keys_.plain("dead-letters")}};
  auto rs = co_await conn_->exec_all(std::move(cmds));
  const std::string ns = "namespace=\"" + metric_label_value(keys_.ns()) + "\"";
  out += metric_text("pushonce_redis_up", "gauge", "1 when Redis answered this scrape.", own,
                     rs[0].ok() ? 1 : 0);
  if (!rs[0].ok()) co_return out;
  std::vector<std::pair<std::string, std::string>> stats;
  for (std::size_t i = 0; i + 1 < rs[0].value.elements.size(); i += 2)
    stats.emplace_back(rs[0].value.elements[i].str, rs[0].value.elements[i + 1].str);
  out += system_counters_text(stats, ns);
  auto count = [](const redis::result& r) {
    return r.ok() ? static_cast<double>(r.value.integer) : 0.0;
  };
  out += metric_text("pushonce_workers_alive", "gauge",
                     "Workers whose heartbeat was seen in the last 3 s.", ns, count(rs[1]));
  out += metric_text("pushonce_gateways_alive", "gauge",
                     "Gateways whose heartbeat was seen in the last 3 s.", ns, count(rs[2]));
  out += metric_text("pushonce_dead_letters", "gauge",
                     "Entries in the dead-letter stream (list, replay or purge them).", ns,
                     count(rs[3]));
  // Sweeper lag per outbox (this leader's queues, every bus shard): the age of the oldest
  // entry after the sweep cursor, 0 when none. A few leases at most while the sweepers keep
  // up; it grows while no worker sweeps.
  struct lag_outbox {
    std::string label, stream, cursor;
  };
  std::vector<lag_outbox> outboxes;
  for (const auto& q : opts_.queues)
    outboxes.push_back({"q:" + q, keys_.queue(q, "outbox"), keys_.queue(q, "sweep")});
  for (unsigned n = 0; n < keys_.shards(); ++n)
    outboxes.push_back({"bus:" + std::to_string(n), keys_.bus(n, "outbox"), keys_.bus(n, "sweep")});
  std::vector<redis::command> cursors;
  for (const auto& o : outboxes) cursors.push_back({"GET", o.cursor});
  auto cs = co_await conn_->exec_all(std::move(cursors));
  std::vector<redis::command> oldest;
  for (std::size_t i = 0; i < outboxes.size(); ++i) {
    std::string from = cs[i].ok() && !cs[i].value.is_nil() ? "(" + cs[i].value.str : "-";
    oldest.push_back({"XRANGE", outboxes[i].stream, from, "+", "COUNT", "1"});
  }
  auto os = co_await conn_->exec_all(std::move(oldest));
  out +=
      "# HELP pushonce_sweeper_lag_seconds Age of the oldest outbox entry the sweepers have "
      "not passed yet (0: none).\n# TYPE pushonce_sweeper_lag_seconds gauge\n";
  for (std::size_t i = 0; i < outboxes.size(); ++i) {
    double lag = 0;
    if (os[i].ok() && !os[i].value.elements.empty()) {
      const auto& id = os[i].value.elements[0].elements.empty()
                           ? os[i].value.elements[0].str
                           : os[i].value.elements[0].elements[0].str;
      long long ms = std::atoll(id.c_str());
      if (ms > 0 && now > ms) lag = static_cast<double>(now - ms) / 1000.0;
    }
    out += fmt::format("pushonce_sweeper_lag_seconds{{{},outbox=\"{}\"}} {}\n", ns,
                       metric_label_value(outboxes[i].label), lag);
  }
  co_return out;
}

asio::awaitable<bool> leader_daemon::ensure_source(const std::string& queue) {
  if (sources_.count(queue)) co_return true;
  auto idx = co_await queues_.source_index(queue);
  if (!idx) {
    log::warn("queue {}: no source index: {}", queue, idx.error().message);
    co_return false;
  }
  sources_[queue] = idx.value();
  co_return true;
}

// Trace events and the published count of a batch, pipelined and not awaited: tracing
// never slows the assigner.
void leader_daemon::record(const std::string& queue, const std::vector<assignment>& batch,
                           const char* kind) {
  tracer trace(conn_, keys_);
  for (const auto& a : batch) {
    trace.record(a.id, {{"event", "published"},
                        {"kind", kind},
                        {"queue", queue},
                        {"user", a.user},
                        {"resource", a.resource},
                        {"leader", opts_.id}});
    if (log::current_level() <= log::level::debug)
      log::debug(log::fields{{"message_id", a.id}, {"user", a.user}}, "queue {}: {} {} to {}",
                 queue, kind, a.resource, a.user);
  }
  conn_->async_exec(
      redis::command{"HINCRBY", keys_.plain("stats"), "published", std::to_string(batch.size())},
      asio::detached);
}

// Assignments past their accept deadline expire here (their resource goes back to the
// free list and the assigner hands it on), a batch per call. Runs whatever this leader's
// own --accept-timeout is: an earlier leader may have set deadlines.
asio::awaitable<void> leader_daemon::expire_loop() {
  asio::steady_timer timer(ex_);
  while (!stopping_) {
    timer.expires_after(std::chrono::milliseconds(100));
    co_await timer.async_wait(use_tuple);
    if (!leading()) continue;
    for (const auto& queue : opts_.queues) {
      if (!co_await ensure_source(queue)) continue;
      // Copied once: a step-down during a call clears sources_ (never operator[] after a
      // co_await, which would insert source 0 for a re-lead).
      auto found = sources_.find(queue);
      if (found == sources_.end()) continue;
      const auto source = found->second;
      for (int i = 0; i < 100 && leading(); ++i) {
        auto r = co_await queues_.expire_batch(queue, source, lease_.token(), opts_.batch);
        if (!r) {
          if (r.error().code == errc::fenced)
            co_await fenced(queue, "a newer leader has acted on this queue");
          break;
        }
        if (r.value().empty()) break;
        record(queue, r.value(), "expired");
        log::info("queue {}: {} assignments expired", queue, r.value().size());
        dirty_.insert(queue);
        wake_timer_.cancel();
        if (static_cast<long long>(r.value().size()) < opts_.batch) break;
      }
    }
  }
}

namespace {
long long leader_now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::vector<redis::command> settings_reads(const keys& k, const std::vector<std::string>& queues) {
  std::vector<redis::command> cmds;
  for (const auto& q : queues) cmds.push_back({"HGETALL", k.queue(q, "settings")});
  return cmds;
}
}  // namespace

// Every 100 ms the leader looks at its queues' settings; a queue in its pre-queue whose
// opening time has come is opened (the scripts check the time again on Redis's clock).
asio::awaitable<void> leader_daemon::opening_loop() {
  asio::steady_timer timer(ex_);
  while (!stopping_) {
    timer.expires_after(std::chrono::milliseconds(100));
    co_await timer.async_wait(use_tuple);
    if (!leading() || stopping_) continue;
    auto rs = co_await conn_->exec_all(settings_reads(keys_, opts_.queues));
    for (std::size_t i = 0; i < rs.size() && i < opts_.queues.size(); ++i) {
      if (!rs[i].ok()) continue;
      std::vector<std::pair<std::string, std::string>> fields;
      const auto& e = rs[i].value.elements;
      for (std::size_t j = 0; j + 1 < e.size(); j += 2) fields.emplace_back(e[j].str, e[j + 1].str);
      auto s = parse_queue_settings(fields);
      if (opening_plan::due(s, leader_now_ms()) && leading())
        co_await open_queue(opts_.queues[i], s.shuffle);
    }
  }
}

asio::awaitable<void> leader_daemon::open_queue(const std::string& queue, bool shuffle) {
  opening_plan plan(opts_.opening_batch);
  plan.begin(shuffle);
  log::info("queue {}: opening the pre-queue{}", queue, shuffle ? " (shuffled)" : "");
  const auto& draw_script = redis::get_script("opening_draw");
  const auto& move_script = redis::get_script("opening_move");
  std::vector<unsigned char> random;
  while (!plan.finished() && leading() && !stopping_) {
    auto step = plan.next();
    std::vector<redis::command> cmd;
    if (step.what == opening_plan::step::kind::draw) {
      random.resize(static_cast<std::size_t>(step.count) * 7);
      if (RAND_bytes(random.data(), static_cast<int>(random.size())) != 1) {
        log::error("queue {}: the random generator failed: opening postponed", queue);
        co_return;
      }
      std::vector<long long> draw_keys;
      for (long long j = 0; j < step.count; ++j)
        draw_keys.push_back(
            draw_key_of(std::span<const unsigned char, 7>(random.data() + 7 * j, 7)));
      cmd.push_back(lua::opening_draw_command(keys_, queue, lease_.token(), step.after, draw_keys));
    } else {
      cmd.push_back(lua::opening_move_command(keys_, queue, lease_.token(), step.count));
    }
    const auto& script = step.what == opening_plan::step::kind::draw ? draw_script : move_script;
    auto rs = co_await redis::eval_all(*conn_, script, std::move(cmd));
    auto& r = rs.at(0);
    if (!r.ok()) {
      if (r.value.is_error() && errc_of_code(r.value.error_code()) == errc::fenced)
        co_await fenced(queue, "a newer leader has acted on this queue");
      else
        log::warn("queue {}: opening step failed: {}", queue,
                  r.value.is_error() ? r.value.str : r.ec.message());
      co_return;
    }
    if (step.what == opening_plan::step::kind::draw) {
      auto d = lua::parse_opening_draw_reply(r.value);
      if (!d) co_return;
      plan.on_draw(*d);
    } else {
      auto m = lua::parse_opening_move_reply(r.value);
      if (!m) co_return;
      plan.on_move(*m);
    }
  }
  if (plan.finished())
    log::info("queue {}: opened: {} drawn, {} moved", queue, plan.drawn(), plan.moved());
}

asio::awaitable<void> leader_daemon::assign_queue(const std::string& queue) {
  if (!co_await ensure_source(queue)) {
    dirty_.insert(queue);
    co_return;
  }
  auto found = sources_.find(queue);
  if (found == sources_.end()) co_return;  // stepped down meanwhile
  const auto source = found->second;
  // Bounded rounds so one busy queue cannot starve the others or the lease renewal.
  for (int i = 0; i < 100 && leading() && !stopping_; ++i) {
    auto r = co_await assign_signed(queue, source);
    if (!r) {
      if (r.error().code == errc::fenced) {
        // The queues after this one go on with the same token (their fences are theirs).
        co_await fenced(queue, "a newer leader has assigned on this queue");
      } else {
        log::warn("queue {}: assign failed: {} {}", queue, r.error().code, r.error().message);
        dirty_.insert(queue);
      }
      break;
    }
    if (r.value().empty()) break;
    assigned_ += r.value().size();
    record(queue, r.value(), "assignment");
    // A short batch: nobody else waits or nothing else is free (or stale heads were
    // dropped; the script's own wake brings us back then).
    if (static_cast<long long>(r.value().size()) < opts_.batch) break;
    if (i == 99) dirty_.insert(queue);
  }
}

asio::awaitable<void> leader_daemon::assign_loop() {
  while (!stopping_) {
    if (dirty_.empty()) {
      wake_timer_.expires_after(opts_.tick);
      auto [ec] = co_await wake_timer_.async_wait(use_tuple);
      if (stopping_) break;
      if (!ec) dirty_.insert(opts_.queues.begin(), opts_.queues.end());  // the tick
    }
    if (!leading()) {
      dirty_.clear();
      continue;
    }
    auto todo = std::move(dirty_);
    dirty_.clear();
    for (const auto& q : todo) co_await assign_queue(q);
  }
}

// Abandonment (docs/data-model.md, "Presence"): users absent for a queue's abandon_after
// leave it (abandon.lua), users every queue has dealt with are forgotten (presence_drop.lua),
// and the sessions of dead gateway instances are counted closed (presence_fold.lua).
// abandon_plan decides what to read and whom to abandon; this only carries it out.
asio::awaitable<void> leader_daemon::presence_loop() {
  asio::steady_timer timer(ex_);
  while (!stopping_) {
    timer.expires_after(opts_.presence_tick);
    co_await timer.async_wait(use_tuple);
    if (!leading() || stopping_) continue;
    co_await abandon_sweep();
  }
}

namespace {
long long redis_time_ms(const redis::result& r) {
  if (!r.ok() || r.value.elements.size() != 2) return 0;
  auto s = r.value.at(0).as_int(), us = r.value.at(1).as_int();
  if (!s || !us) return 0;
  return *s * 1000 + *us / 1000;
}
}  // namespace

asio::awaitable<void> leader_daemon::abandon_sweep() {
  std::vector<redis::command> cmds;
  cmds.push_back({"TIME"});
  for (const auto& q : opts_.queues)
    cmds.push_back({"HGET", keys_.queue(q, "settings"), "abandon_after_s"});
  auto rs = co_await conn_->exec_all(std::move(cmds));
  const long long now = redis_time_ms(rs[0]);
  if (now == 0) co_return;  // Redis is not answering: the next tick tries again
  std::map<std::string, std::optional<std::chrono::milliseconds>> afters;
  for (std::size_t i = 0; i < opts_.queues.size(); ++i) {
    const auto& r = rs[i + 1];
    if (!r.ok()) co_return;
    std::optional<std::string> field;
    if (r.value.is_string()) field = r.value.str;
    afters[opts_.queues[i]] = abandon_after_of(field);
  }
  for (const auto& [queue, after] : afters) {
    if (!leading()) co_return;
    co_await abandon_queue(queue, after, now);
  }
  if (auto horizon = abandon_.drop_horizon(afters, now)) {
    for (int i = 0; i < 10; ++i) {
      std::vector<redis::command> drop;
      drop.push_back(lua::presence_drop_command(keys_, *horizon, 10000));
      auto d =
          co_await redis::eval_all(*conn_, redis::get_script("presence_drop"), std::move(drop));
      if (!d.at(0).ok() || d[0].value.integer < 10000) break;
    }
  }
  co_await fold_dead_gateways(now);
}

asio::awaitable<void> leader_daemon::abandon_queue(const std::string& queue,
                                                   std::optional<std::chrono::milliseconds> after,
                                                   long long now) {
  // Bounded rounds per tick, as the assigner's: the rest waits for the next tick.
  for (int round = 0; round < 20 && leading(); ++round) {
    auto range = abandon_.next_range(queue, after, now);
    if (!range) co_return;
    auto ask = lua::absent_range_command(keys_, range->min, range->max, range->limit);
    auto read = co_await conn_->exec(std::move(ask));
    if (!read.ok()) co_return;
    auto got = lua::parse_absent_range(read.value);
    if (!got) co_return;
    auto users = abandon_.on_read(queue, *range, *got);
    for (std::size_t from = 0; from < users.size(); from += 1000) {
      auto to = std::min(users.size(), from + 1000);
      std::vector<std::string> part(users.begin() + static_cast<std::ptrdiff_t>(from),
                                    users.begin() + static_cast<std::ptrdiff_t>(to));
      std::vector<redis::command> call;
      call.push_back(lua::abandon_command(keys_, queue, lease_.token(), part));
      auto r = co_await redis::eval_all(*conn_, redis::get_script("abandon"), std::move(call));
      if (!r.at(0).ok()) {
        if (r[0].value.error_code() == "fenced")
          co_await fenced(queue, "a newer leader has acted on this queue");
        else
          log::warn("queue {}: abandon failed: {}", queue,
                    r[0].ec ? r[0].ec.message() : r[0].value.str);
        abandon_.reset();  // read these again next time
        co_return;
      }
      auto done = lua::parse_abandon_reply(r[0].value);
      if (done && (done->removed > 0 || done->ended > 0))
        log::info("queue {}: abandoned by users without a session: {} waiting, {} assignments",
                  queue, done->removed, done->ended);
    }
    if (!abandon_.more(queue)) co_return;
  }
}

asio::awaitable<void> leader_daemon::fold_dead_gateways(long long now) {
  redis::command list{"ZRANGE", lua::presence_key(keys_, "gws"), "0", "999", "WITHSCORES"};
  auto listed = co_await conn_->exec(std::move(list));
  if (!listed.ok() || listed.value.elements.empty()) co_return;
  std::vector<gateway_instance> all;
  std::vector<redis::command> beats;
  const auto& e = listed.value.elements;
  for (std::size_t i = 0; i + 1 < e.size(); i += 2) {
    all.push_back({e[i].str, e[i + 1].as_int().value_or(0), std::nullopt});
    beats.push_back(
        {"HGET", keys_.plain("gateway:" + lua::gateway_of_instance(e[i].str)), "presence"});
  }
  auto hs = co_await conn_->exec_all(std::move(beats));
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (!hs[i].ok()) co_return;  // unknown: never fold on a failed read
    if (hs[i].value.is_string()) all[i].heartbeat = hs[i].value.str;
  }
  for (const auto& instance : dead_instances(all, now, opts_.gateway_grace)) {
    long long folded = 0;
    for (int round = 0; round < 20 && leading(); ++round) {
      auto& cursor = fold_cursors_[instance];
      if (cursor.empty()) cursor = "0";
      std::vector<redis::command> call;
      call.push_back(lua::presence_fold_command(keys_, instance, cursor, 1000));
      auto r =
          co_await redis::eval_all(*conn_, redis::get_script("presence_fold"), std::move(call));
      auto reply = r.at(0).ok() ? lua::parse_fold_reply(r[0].value) : std::nullopt;
      if (!reply) break;
      folded += reply->folded;
      if (reply->done) {
        fold_cursors_.erase(instance);
        break;
      }
      fold_cursors_[instance] = reply->cursor;
    }
    if (folded > 0)
      log::info("gateway instance {} is gone: {} users' sessions counted closed", instance, folded);
  }
}

asio::awaitable<void> leader_daemon::stop() {
  stopping_ = true;
  wake_timer_.cancel();
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
