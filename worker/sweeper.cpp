#include "worker/sweeper.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "core/log.hpp"

namespace pushonce::worker {

namespace asio = boost::asio;

std::optional<long long> sweeper::now_of(const redis::result& t) {
  if (!t.ok()) return std::nullopt;
  auto s = t.value.at(0).as_int(), us = t.value.at(1).as_int();
  if (!s || !us) return std::nullopt;
  return *s * 1000 + *us / 1000;
}

sweeper::sweeper(std::shared_ptr<redis::connection> conn, keys k, sweeper_options opts,
                 redrive_fn redrive, malformed_fn malformed)
    : conn_(std::move(conn)),
      keys_(std::move(k)),
      opts_(std::move(opts)),
      redrive_(std::move(redrive)),
      malformed_(std::move(malformed)) {}

asio::awaitable<void> sweeper::run() {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  while (!stopped_) {
    timer.expires_after(opts_.interval);
    co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
    if (stopped_) break;
    auto st = co_await sweep_all();
    if (st.redriven || st.malformed || st.expired)
      log::info("sweep: {} entries checked, {} re-driven, {} malformed, {} expired", st.scanned,
                st.redriven, st.malformed, st.expired);
  }
}

asio::awaitable<std::vector<sweeper::outbox_ref>> sweeper::outboxes() {
  std::vector<redis::command> cmds;
  cmds.push_back({"HKEYS", keys_.plain("sources")});
  // The namespace's shards (NS:layout makes every process agree on their number).
  const unsigned shards = keys_.shards();
  for (unsigned n = 0; n < shards; ++n) cmds.push_back({"EXISTS", keys_.bus(n, "outbox")});
  auto rs = co_await conn_->exec_all(std::move(cmds));
  std::vector<outbox_ref> out;
  if (!rs[0].ok()) co_return out;
  for (auto& name : rs[0].value.elements) {
    if (name.str.rfind("q:", 0) != 0) continue;
    auto q = name.str.substr(2);
    out.push_back({keys_.queue(q, "outbox"), keys_.queue(q, "sweep"), keys_.queue(q, "sweep:lock"),
                   keys_.queue(q, "sweep:passed")});
  }
  for (unsigned n = 0; n < shards; ++n)
    if (rs[n + 1].ok() && rs[n + 1].value.integer == 1) out.push_back(shard_outbox(n));
  co_return out;
}

sweeper::outbox_ref sweeper::shard_outbox(unsigned shard) const {
  return {keys_.bus(shard, "outbox"), keys_.bus(shard, "sweep"), keys_.bus(shard, "sweep:lock"),
          keys_.bus(shard, "sweep:passed")};
}

asio::awaitable<sweep_stats> sweeper::sweep_all() {
  sweep_stats st;
  auto list = co_await outboxes();
  for (const auto& o : list) {
    if (stopped_) break;
    // One sweeper per outbox per interval, whichever worker gets there first.
    redis::command lock{"SET", o.lock, opts_.owner,
                        "NX",  "PX",   std::to_string(opts_.interval.count())};
    auto got = co_await conn_->exec(std::move(lock));
    if (!got.ok() || got.value.is_nil()) continue;
    co_await sweep(o, st);
  }
  co_return st;
}

asio::awaitable<void> sweeper::sweep(const outbox_ref& o, sweep_stats& st) {
  co_await check_trimmed(o, st);
  for (std::size_t page = 0; page < opts_.max_pages && !stopped_; ++page) {
    redis::command time{"TIME"};
    auto now = now_of(co_await conn_->exec(std::move(time)));
    if (!now || !co_await sweep_page(o, *now, st)) break;
    redis::command extend{"PEXPIRE", o.lock, std::to_string(opts_.interval.count())};
    co_await conn_->exec(std::move(extend));
  }
}

// Entries trimmed (outbox retention) that the cursor had not passed were never checked:
// workers were away longer than the retention. Counted and logged (trimmed_unseen decides).
asio::awaitable<void> sweeper::check_trimmed(const outbox_ref& o, sweep_stats& st) {
  std::vector<redis::command> cmds{
      {"GET", o.cursor}, {"GET", o.passed}, {"XINFO", "STREAM", o.stream}};
  auto rs = co_await conn_->exec_all(std::move(cmds));
  if (!rs[0].ok() || !rs[1].ok() || !rs[2].ok()) co_return;
  const auto& added = rs[2].value.field("entries-added");
  const auto& length = rs[2].value.field("length");
  if (added.kind != redis::reply::type::integer || length.kind != redis::reply::type::integer)
    co_return;
  auto passed = rs[1].value.is_nil() ? std::nullopt : rs[1].value.as_int();
  auto t = trimmed_unseen(added.integer, length.integer, !rs[0].value.is_nil(), passed);
  if (t.lost > 0) {
    st.expired += static_cast<std::size_t>(t.lost);
    log::warn(
        "sweep: {} outbox entries of {} were trimmed (outbox retention) before any sweeper "
        "checked them: their messages may be lost",
        t.lost, o.stream);
  }
  if (t.lost == 0 && passed == t.passed) co_return;
  std::vector<redis::command> after{{"SET", o.passed, std::to_string(t.passed)}};
  if (t.rescan) after.push_back({"DEL", o.cursor});
  if (t.lost > 0)
    after.push_back(
        {"HINCRBY", keys_.plain("stats"), "retention_exceeded", std::to_string(t.lost)});
  co_await conn_->exec_all(std::move(after));
}

asio::awaitable<std::vector<std::optional<redis::reply>>> sweeper::values(
    std::vector<lua::record_ref> refs) {
  if (refs.empty()) co_return std::vector<std::optional<redis::reply>>{};
  auto reads = lua::claim_record_reads(refs, conn_->is_cluster());
  auto rs = co_await conn_->exec_all(reads);
  std::vector<std::optional<redis::reply>> replies;
  replies.reserve(rs.size());
  for (auto& r : rs) replies.push_back(r.ok() ? std::optional(std::move(r.value)) : std::nullopt);
  co_return lua::read_values(reads, replies);
}

asio::awaitable<void> sweeper::resolve(sweep_plan& plan) {
  // Entries whose whole payload a worker claimed with every message finished carry its
  // mark: one key per entry instead of one claim record per message (a single Redis only,
  // see writes_batch_mark in claim_policy).
  std::vector<lua::record_ref> batch_keys;
  if (!conn_->is_cluster())
    for (const auto* m : plan.to_check_batches()) batch_keys.push_back({keys_.batch(m->id), {}});
  std::vector<std::optional<lua::batch_mark>> marks;
  for (const auto& v : co_await values(std::move(batch_keys)))
    marks.push_back(v ? lua::parse_batch_done(*v) : std::nullopt);
  plan.on_batch_marks(marks);

  std::vector<lua::record_ref> claim_keys;
  for (const auto* m : plan.to_check()) claim_keys.push_back(lua::claim_record_ref(keys_, *m));
  std::vector<std::optional<lua::claim_record>> records;
  for (const auto& v : co_await values(std::move(claim_keys)))
    records.push_back(v ? lua::parse_claim_record(*v) : std::nullopt);
  plan.on_records(records);
  auto redrive = plan.to_redrive();
  if (!redrive.empty()) plan.on_redriven(co_await redrive_(std::move(redrive)));
}

asio::awaitable<bool> sweeper::sweep_page(const outbox_ref& o, long long now_ms, sweep_stats& st) {
  redis::command get_cursor{"GET", o.cursor};
  auto cur = co_await conn_->exec(std::move(get_cursor));
  if (!cur.ok()) co_return false;
  std::string cursor = cur.value.is_nil() ? "0-0" : cur.value.str;
  redis::command range{"XRANGE", o.stream, "(" + cursor, "+", "COUNT", std::to_string(opts_.batch)};
  auto entries = co_await conn_->exec(std::move(range));
  if (!entries.ok()) co_return false;
  auto full_page = entries.value.elements.size() == opts_.batch;

  sweep_plan plan(opts_.lease, opts_.dedup_window, now_ms);
  std::vector<outbox_entry> page;
  for (auto& e : entries.value.elements) page.push_back({e.at(0).str, e.at(1).field("m").str});
  plan.take(std::move(page));
  if (plan.looked_at() == 0) co_return false;

  co_await resolve(plan);

  auto bad = plan.malformed();
  for (const auto& [entry, line] : bad) malformed_(entry, line);
  if (auto n = plan.expired()) {
    log::warn("sweep: {} entries of {} were never delivered and are past the dedup window", n,
              o.stream);
    redis::command count{"HINCRBY", keys_.plain("stats"), "retention_exceeded", std::to_string(n)};
    co_await conn_->exec(std::move(count));
  }
  st.scanned += plan.looked_at();
  st.redriven += plan.redriven();
  st.malformed += bad.size();
  st.expired += plan.expired();

  auto advance = plan.cursor();
  if (advance.empty()) co_return false;
  std::vector<redis::command> move{{"SET", o.cursor, advance},
                                   {"INCRBY", o.passed, std::to_string(plan.passed())}};
  co_await conn_->exec_all(std::move(move));
  co_return full_page&& plan.entries() == opts_.batch&& advance == plan.last_id();
}

}  // namespace pushonce::worker
