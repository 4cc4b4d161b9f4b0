#include "leader/opener.hpp"

#include <openssl/rand.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <span>
#include <vector>

#include "core/exit_on_exception.hpp"
#include "core/log.hpp"
#include "core/lua/opening.hpp"
#include "core/queue_settings.hpp"
#include "core/use_tuple.hpp"
#include "leader/opening_plan.hpp"

namespace pushonce::leader {

namespace asio = boost::asio;

void opener::start() {
  asio::co_spawn(ctx_.ex, opening_loop(), exit_on_exception("leader opening loop"));
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
asio::awaitable<void> opener::opening_loop() {
  asio::steady_timer timer(ctx_.ex);
  while (!ctx_.stopping()) {
    timer.expires_after(std::chrono::milliseconds(100));
    co_await timer.async_wait(use_tuple);
    if (!ctx_.leading() || ctx_.stopping()) continue;
    auto rs = co_await ctx_.conn->exec_all(settings_reads(ctx_.k, ctx_.opts.queues));
    for (std::size_t i = 0; i < rs.size() && i < ctx_.opts.queues.size(); ++i) {
      if (!rs[i].ok()) continue;
      std::vector<std::pair<std::string, std::string>> fields;
      const auto& e = rs[i].value.elements;
      for (std::size_t j = 0; j + 1 < e.size(); j += 2) fields.emplace_back(e[j].str, e[j + 1].str);
      auto s = parse_queue_settings(fields);
      if (opening_plan::due(s, leader_now_ms()) && ctx_.leading())
        co_await open_queue(ctx_.opts.queues[i], s.shuffle);
    }
  }
}

asio::awaitable<void> opener::open_queue(const std::string& queue, bool shuffle) {
  opening_plan plan(ctx_.opts.opening_batch);
  plan.begin(shuffle);
  log::info("queue {}: opening the pre-queue{}", queue, shuffle ? " (shuffled)" : "");
  std::vector<unsigned char> random;
  while (!plan.finished() && ctx_.leading() && !ctx_.stopping()) {
    auto step = plan.next();
    redis::result r;
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
      auto in = lua::opening_draw_for(ctx_.k, queue, ctx_.token(), step.after, draw_keys);
      r = co_await lua::run_script(*ctx_.conn, std::move(in));
    } else {
      auto in = lua::opening_move_for(ctx_.k, queue, ctx_.token(), step.count);
      r = co_await lua::run_script(*ctx_.conn, std::move(in));
    }
    if (!r.ok()) {
      if (r.value.is_error() && errc_of_code(r.value.error_code()) == errc::fenced)
        co_await ctx_.fenced(queue, "a newer leader has acted on this queue");
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

}  // namespace pushonce::leader
