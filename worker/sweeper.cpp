#include "worker/sweeper.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "core/log.hpp"

namespace pushonce::worker {

namespace asio = boost::asio;

namespace {

long long stream_ms(const std::string& entry_id) {
  return std::stoll(entry_id.substr(0, entry_id.find('-')));
}

std::string field(const redis::reply& fields, std::string_view name) {
  for (std::size_t i = 0; i + 1 < fields.elements.size(); i += 2)
    if (fields.elements[i].str == name) return fields.elements[i + 1].str;
  return {};
}

}  // namespace

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
    if (st.redriven || st.malformed)
      log::info("sweep: {} entries checked, {} re-driven, {} malformed", st.scanned, st.redriven,
                st.malformed);
  }
}

asio::awaitable<std::vector<sweeper::outbox_ref>> sweeper::outboxes() {
  std::vector<redis::command> cmds;
  cmds.push_back({"HKEYS", keys_.plain("sources")});
  for (unsigned n = 0; n < 16; ++n) cmds.push_back({"EXISTS", keys_.bus(n, "outbox")});
  auto rs = co_await conn_->exec_all(std::move(cmds));
  std::vector<outbox_ref> out;
  if (!rs[0].ok()) co_return out;
  for (auto& name : rs[0].value.elements) {
    if (name.str.rfind("q:", 0) != 0) continue;
    auto q = name.str.substr(2);
    out.push_back(
        {keys_.queue(q, "outbox"), keys_.queue(q, "sweep"), keys_.queue(q, "sweep:lock")});
  }
  for (unsigned n = 0; n < 16; ++n)
    if (rs[n + 1].ok() && rs[n + 1].value.integer == 1)
      out.push_back({keys_.bus(n, "outbox"), keys_.bus(n, "sweep"), keys_.bus(n, "sweep:lock")});
  co_return out;
}

asio::awaitable<sweep_stats> sweeper::sweep_all() {
  sweep_stats st;
  redis::command time{"TIME"};
  auto t = co_await conn_->exec(std::move(time));
  if (!t.ok()) co_return st;
  long long now_ms = *t.value.at(0).as_int() * 1000 + *t.value.at(1).as_int() / 1000;
  auto list = co_await outboxes();
  for (const auto& o : list) {
    // One sweeper per outbox per interval, whichever worker gets there first.
    redis::command lock{"SET", o.lock, opts_.owner,
                        "NX",  "PX",   std::to_string(opts_.interval.count())};
    auto got = co_await conn_->exec(std::move(lock));
    if (!got.ok() || got.value.is_nil()) continue;
    co_await sweep(o, now_ms, st);
  }
  co_return st;
}

asio::awaitable<void> sweeper::sweep(const outbox_ref& o, long long now_ms, sweep_stats& st) {
  redis::command get_cursor{"GET", o.cursor};
  auto cur = co_await conn_->exec(std::move(get_cursor));
  if (!cur.ok()) co_return;
  std::string cursor = cur.value.is_nil() ? "0-0" : cur.value.str;
  redis::command range{"XRANGE", o.stream, "(" + cursor, "+", "COUNT", std::to_string(opts_.batch)};
  auto entries = co_await conn_->exec(std::move(range));
  if (!entries.ok()) co_return;

  // Entries old enough to have been delivered, with their claim states in one pipeline.
  struct item {
    std::string entry_id, raw;
    std::optional<bus_message> m;
  };
  std::vector<item> old;
  std::vector<redis::command> states;
  for (auto& e : entries.value.elements) {
    auto entry_id = e.at(0).str;
    auto age = now_ms - stream_ms(entry_id);
    if (age < opts_.lease.count()) break;  // the normal path may still be on it
    item it{entry_id, field(e.at(1), "m"), std::nullopt};
    it.m = parse_bus_message(it.raw);
    // Older than the claims are kept: its claim record is gone; never re-drive.
    if (age > (opts_.dedup_window - opts_.lease * 2).count()) it.m.reset(), it.raw.clear();
    states.push_back(it.m ? redis::command{"HGET", keys_.claim(it.m->user, it.m->id), "state"}
                          : redis::command{"PING"});
    old.push_back(std::move(it));
  }
  if (old.empty()) co_return;
  auto rs = co_await conn_->exec_all(std::move(states));

  std::string advance;  // the cursor moves over the leading run of finished entries
  bool blocked = false;
  for (std::size_t i = 0; i < old.size(); ++i) {
    ++st.scanned;
    auto& it = old[i];
    bool finished = true;
    if (!it.m) {
      if (!it.raw.empty()) {
        ++st.malformed;
        malformed_(it.entry_id, it.raw);
      }
    } else if (!rs[i].ok()) {
      finished = false;
    } else {
      const auto& state = rs[i].value.str;
      if (state != "delivered" && state != "dead") {
        finished = false;
        ++st.redriven;
        redrive_(std::move(*it.m));
      }
    }
    if (!finished) blocked = true;
    if (!blocked) advance = it.entry_id;
  }
  if (!advance.empty()) {
    redis::command set{"SET", o.cursor, advance, "PX", std::to_string(opts_.dedup_window.count())};
    co_await conn_->exec(std::move(set));
  }
}

}  // namespace pushonce::worker
