#include "leader/presence_keeper.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <vector>

#include "core/exit_on_exception.hpp"
#include "core/log.hpp"
#include "core/lua/presence.hpp"
#include "core/use_tuple.hpp"

namespace pushonce::leader {

namespace asio = boost::asio;

void presence_keeper::start() {
  asio::co_spawn(ctx_.ex, presence_loop(), exit_on_exception("leader presence loop"));
}

// Abandonment (docs/data-model.md, "Presence"): users absent for a queue's abandon_after
// leave it (abandon.lua), users every queue has dealt with are forgotten (presence_drop.lua),
// and the sessions of dead gateway instances are counted closed (presence_fold.lua).
// abandon_plan decides what to read and whom to abandon; this only carries it out.
asio::awaitable<void> presence_keeper::presence_loop() {
  asio::steady_timer timer(ctx_.ex);
  while (!ctx_.stopping()) {
    timer.expires_after(ctx_.opts.presence_tick);
    co_await timer.async_wait(use_tuple);
    if (!ctx_.leading() || ctx_.stopping()) continue;
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

asio::awaitable<void> presence_keeper::abandon_sweep() {
  std::vector<redis::command> cmds;
  cmds.push_back({"TIME"});
  for (const auto& q : ctx_.opts.queues)
    cmds.push_back({"HGET", ctx_.k.queue(q, "settings"), "abandon_after_s"});
  auto rs = co_await ctx_.conn->exec_all(std::move(cmds));
  const long long now = redis_time_ms(rs[0]);
  if (now == 0) co_return;  // Redis is not answering: the next tick tries again
  std::map<std::string, std::optional<std::chrono::milliseconds>> afters;
  for (std::size_t i = 0; i < ctx_.opts.queues.size(); ++i) {
    const auto& r = rs[i + 1];
    if (!r.ok()) co_return;
    std::optional<std::string> field;
    if (r.value.is_string()) field = r.value.str;
    afters[ctx_.opts.queues[i]] = abandon_after_of(field);
  }
  for (const auto& [queue, after] : afters) {
    if (!ctx_.leading()) co_return;
    co_await abandon_queue(queue, after, now);
  }
  if (auto horizon = abandon_.drop_horizon(afters, now)) {
    for (int i = 0; i < 10; ++i) {
      auto in = lua::presence_drop_for(ctx_.k, *horizon, 10000);
      auto d = co_await lua::run_script(*ctx_.conn, std::move(in));
      if (!d.ok() || d.value.integer < 10000) break;
    }
  }
  co_await fold_dead_gateways(now);
}

asio::awaitable<void> presence_keeper::abandon_queue(const std::string& queue,
                                                     std::optional<std::chrono::milliseconds> after,
                                                     long long now) {
  // Bounded rounds per tick, as the assigner's: the rest waits for the next tick.
  for (int round = 0; round < 20 && ctx_.leading(); ++round) {
    auto range = abandon_.next_range(queue, after, now);
    if (!range) co_return;
    auto ask = lua::absent_range_command(ctx_.k, range->min, range->max, range->limit);
    auto read = co_await ctx_.conn->exec(std::move(ask));
    if (!read.ok()) co_return;
    auto got = lua::parse_absent_range(read.value);
    if (!got) co_return;
    auto users = abandon_.on_read(queue, *range, *got);
    for (std::size_t from = 0; from < users.size(); from += 1000) {
      auto to = std::min(users.size(), from + 1000);
      std::vector<std::string> part(users.begin() + static_cast<std::ptrdiff_t>(from),
                                    users.begin() + static_cast<std::ptrdiff_t>(to));
      auto in = lua::abandon_for(ctx_.k, queue, ctx_.token(), part);
      auto r = co_await lua::run_script(*ctx_.conn, std::move(in));
      if (!r.ok()) {
        if (r.value.error_code() == "fenced")
          co_await ctx_.fenced(queue, "a newer leader has acted on this queue");
        else
          log::warn("queue {}: abandon failed: {}", queue, r.ec ? r.ec.message() : r.value.str);
        abandon_.reset();  // read these again next time
        co_return;
      }
      auto done = lua::parse_abandon_reply(r.value);
      if (done && (done->removed > 0 || done->ended > 0))
        log::info("queue {}: abandoned by users without a session: {} waiting, {} assignments",
                  queue, done->removed, done->ended);
    }
    if (!abandon_.more(queue)) co_return;
  }
}

asio::awaitable<void> presence_keeper::fold_dead_gateways(long long now) {
  redis::command list{"ZRANGE", lua::presence_key(ctx_.k, "gws"), "0", "999", "WITHSCORES"};
  auto listed = co_await ctx_.conn->exec(std::move(list));
  if (!listed.ok() || listed.value.elements.empty()) co_return;
  std::vector<gateway_instance> all;
  std::vector<redis::command> beats;
  const auto& e = listed.value.elements;
  for (std::size_t i = 0; i + 1 < e.size(); i += 2) {
    all.push_back({e[i].str, e[i + 1].as_int().value_or(0), std::nullopt});
    beats.push_back(
        {"HGET", ctx_.k.plain("gateway:" + lua::gateway_of_instance(e[i].str)), "presence"});
  }
  auto hs = co_await ctx_.conn->exec_all(std::move(beats));
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (!hs[i].ok()) co_return;  // unknown: never fold on a failed read
    if (hs[i].value.is_string()) all[i].heartbeat = hs[i].value.str;
  }
  for (const auto& instance : dead_instances(all, now, ctx_.opts.gateway_grace)) {
    long long folded = 0;
    for (int round = 0; round < 20 && ctx_.leading(); ++round) {
      auto& cursor = fold_cursors_[instance];
      if (cursor.empty()) cursor = "0";
      auto in = lua::presence_fold_for(ctx_.k, instance, cursor, 1000);
      auto r = co_await lua::run_script(*ctx_.conn, std::move(in));
      auto reply = r.ok() ? lua::parse_fold_reply(r.value) : std::nullopt;
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

}  // namespace pushonce::leader
