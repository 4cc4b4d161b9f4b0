// The catch-up of a sweeper (worker/sweeper.hpp): the outbox entries published while a bus
// channel was not heard, re-driven as soon as it is heard again.

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "core/log.hpp"
#include "worker/sweeper.hpp"

namespace pushonce::worker {

namespace asio = boost::asio;

namespace {
constexpr std::chrono::milliseconds retry_gap{200};
}  // namespace

asio::awaitable<void> sweeper::catch_up_shard(unsigned shard, clock_type::time_point deaf_since,
                                              clock_type::time_point heard_again) {
  std::vector<outbox_ref> list{shard_outbox(shard)};
  co_await catch_up(std::move(list), deaf_since, heard_again);
}

asio::awaitable<void> sweeper::catch_up_bus(clock_type::time_point deaf_since,
                                            clock_type::time_point heard_again) {
  auto list = co_await outboxes();
  // On a Redis Cluster the shards publish on their own channels (catch_up_shard).
  if (conn_->is_cluster())
    for (unsigned n = 0; n < keys_.shards(); ++n)
      std::erase_if(list, [&](const outbox_ref& o) { return o.stream == shard_outbox(n).stream; });
  co_await catch_up(std::move(list), deaf_since, heard_again);
}

asio::awaitable<void> sweeper::catch_up(std::vector<outbox_ref> list,
                                        clock_type::time_point deaf_since,
                                        clock_type::time_point heard_again) {
  // A lease after it was heard again, the regular pass looks at the same entries anyway.
  const auto give_up = heard_again + opts_.lease;
  asio::steady_timer pause(co_await asio::this_coro::executor);
  sweep_stats st;
  std::size_t done = 0;
  while (done < list.size() && !stopped_) {
    if (co_await catch_up_one(list[done], deaf_since, heard_again, st)) {
      ++done;
      continue;
    }
    if (clock_type::now() >= give_up) break;
    pause.expires_after(retry_gap);
    co_await pause.async_wait(asio::as_tuple(asio::use_awaitable));
  }
  auto deaf_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(heard_again - deaf_since).count();
  if (done < list.size() && !stopped_)
    log::warn(
        "catch-up after {} ms not hearing the bus: Redis did not answer; the sweeper "
        "re-drives what was missed a lease later",
        deaf_ms);
  if (st.scanned > 0)
    log::info("catch-up after {} ms not hearing the bus: {} messages checked, {} re-driven",
              deaf_ms, st.scanned, st.redriven);
}

asio::awaitable<bool> sweeper::catch_up_one(const outbox_ref& o, clock_type::time_point deaf_since,
                                            clock_type::time_point heard_again, sweep_stats& st) {
  redis::command time{"TIME"};
  auto now = now_of(co_await conn_->exec(std::move(time)));
  if (!now) co_return false;
  auto window = deaf_window_of(*now, clock_type::now(), deaf_since, heard_again,
                               opts_.catch_up_margin, opts_.lease, opts_.dedup_window);
  if (!window) co_return true;
  std::string from = std::to_string(window->from_ms) + "-0";
  for (std::size_t page = 0; page < opts_.max_pages && !stopped_; ++page) {
    redis::command range{"XRANGE", o.stream,
                         from,     std::to_string(window->until_ms),
                         "COUNT",  std::to_string(opts_.batch)};
    auto entries = co_await conn_->exec(std::move(range));
    if (!entries.ok()) co_return false;
    const auto& elements = entries.value.elements;
    if (elements.empty()) break;
    sweep_plan plan(opts_.lease, opts_.dedup_window, *now, window);
    std::vector<outbox_entry> got;
    for (const auto& e : elements) got.push_back({e.at(0).str, e.at(1).field("m").str});
    plan.take(std::move(got));
    co_await resolve(plan);
    st.scanned += plan.looked_at();
    st.redriven += plan.redriven();
    if (elements.size() < opts_.batch) break;
    from = "(" + elements.back().at(0).str;
  }
  co_return true;
}

}  // namespace pushonce::worker
