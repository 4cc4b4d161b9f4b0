// `pushonce-leader trace ID` (docs/protocol.md): finds the message's line in its outbox by
// bisecting the stream on time (ids grow with time inside one outbox), reads its claim
// record, and lets message_history say what happened. Costs a few dozen reads, no writes.

#include <boost/json.hpp>

#include "core/json_text.hpp"
#include "core/message_history.hpp"
#include "core/redis/failure_of.hpp"
#include "core/trace.hpp"
#include "leader/cli/admin.hpp"

namespace pushonce::leader {

namespace asio = boost::asio;
namespace json = boost::json;

namespace {

struct entry {
  long long ms = 0;
  std::string text;
};

std::optional<entry> entry_of(const redis::result& r) {
  if (!r.ok() || r.value.elements.empty()) return std::nullopt;
  const auto& e = r.value.elements.front();
  const auto& f = e.at(1);
  entry out;
  out.ms = std::stoll(e.at(0).str.substr(0, e.at(0).str.find('-')));
  out.text = f.field("m").str;
  return out;
}

asio::awaitable<std::optional<entry>> first_at_or_after(admin_context& ctx, const std::string& s,
                                                        long long ms) {
  redis::command range{"XRANGE", s, std::to_string(ms), "+", "COUNT", "1"};
  auto r = co_await ctx.conn->exec(std::move(range));
  co_return entry_of(r);
}

/// The outbox line of message `id`, or std::nullopt.
asio::awaitable<std::optional<std::string>> find_line(admin_context& ctx, const std::string& s,
                                                      const std::string& id) {
  auto target = std::stoull(id);
  redis::command last_cmd{"XREVRANGE", s, "+", "-", "COUNT", "1"};
  auto first = co_await first_at_or_after(ctx, s, 0);
  auto last_reply = co_await ctx.conn->exec(std::move(last_cmd));
  auto last = entry_of(last_reply);
  if (!first || !last || first_id(first->text) > target) co_return std::nullopt;
  // The last entry whose first id is <= target starts at a time in [lo, hi].
  long long lo = first->ms, hi = last->ms;
  while (lo < hi) {
    auto mid = lo + (hi - lo + 1) / 2;
    auto e = co_await first_at_or_after(ctx, s, mid);
    if (e && first_id(e->text) <= target)
      lo = e->ms;
    else
      hi = mid - 1;
  }
  redis::command range{"XRANGE", s, std::to_string(lo), "+", "COUNT", "20"};
  auto r = co_await ctx.conn->exec(std::move(range));
  if (!r.ok()) co_return std::nullopt;
  for (const auto& e : r.value.elements) {
    if (auto line = line_of(e.at(1).field("m").str, id)) co_return line;
  }
  co_return std::nullopt;
}

/// The outbox of the message's source: id mod 4096 is a bus shard (0..15) or a queue.
asio::awaitable<std::string> outbox_for(admin_context& ctx, const std::string& id) {
  auto source = std::stoull(id) % 4096;
  if (source < 16)
    co_return source < ctx.k.shards() ? ctx.k.bus(static_cast<unsigned>(source), "outbox") : "";
  redis::command all{"HGETALL", ctx.k.plain("sources")};
  auto r = co_await ctx.conn->exec(std::move(all));
  if (!r.ok()) co_return std::string();
  for (std::size_t i = 0; i + 1 < r.value.elements.size(); i += 2)
    if (r.value.elements[i + 1].str == std::to_string(source) &&
        r.value.elements[i].str.rfind("q:", 0) == 0)
      co_return ctx.k.queue(r.value.elements[i].str.substr(2), "outbox");
  co_return std::string();
}

}  // namespace

asio::awaitable<int> run_trace(admin_context& ctx) {
  if (ctx.args.size() != 1)
    co_return ctx.out.usage("usage: pushonce-leader trace ID | trace KEY --user USER");
  std::optional<std::string> user;
  if (ctx.vm.count("user")) user = ctx.vm["user"].as<std::string>();
  auto lookup = trace_lookup_of(ctx.args[0], user);
  if (!lookup.error.empty()) co_return ctx.out.fail({errc::not_found, lookup.error});
  std::string id = lookup.id;
  if (lookup.key) {
    // publish's idempotency key names the message id for the dedup window
    // (the command built before co_await: GCC 12 refuses a braced literal inside it)
    redis::command get{"GET", ctx.k.idem(ctx.k.shard_of(lookup.user), lookup.user, *lookup.key)};
    auto r = co_await ctx.conn->exec(std::move(get));
    if (!r.ok()) co_return ctx.out.fail(failure_of(r));
    if (r.value.kind != redis::reply::type::string)
      co_return ctx.out.fail({errc::not_found, "no message with idempotency key " + *lookup.key +
                                                   " for user " + lookup.user +
                                                   " (unknown, or older than the dedup window)"});
    id = r.value.str;
  }
  auto outbox = co_await outbox_for(ctx, id);
  std::optional<std::string> line;
  if (!outbox.empty()) {
    auto found = co_await find_line(ctx, outbox, id);
    line = std::move(found);
  }
  auto m = line ? parse_bus_message(*line) : std::nullopt;
  if (!m)
    co_return ctx.out.fail({errc::not_found, "no message " + id +
                                                 " in its outbox (unknown, or older than the "
                                                 "outbox retention)"});
  auto record = lua::claim_record_ref(ctx.k, *m);
  std::vector<redis::command> cmds{
      lua::record_read(record), {"LRANGE", ctx.k.plain("trace:" + id), "0", "-1"}, {"TIME"}};
  auto rs = co_await ctx.conn->exec_all(std::move(cmds));
  if (!rs[0].ok()) co_return ctx.out.fail(failure_of(rs[0]));
  std::vector<std::string> detail;
  if (rs[1].ok())
    for (auto& e : rs[1].value.elements) detail.push_back(e.str);
  long long now = rs[2].ok() ? rs[2].value.at(0).as_int().value_or(0) * 1000 : 0;
  auto events = history(*line, lua::parse_claim_record(rs[0].value), detail, now,
                        ctx.retention.dedup_window.count());
  std::string text = "message " + id +
                     (lookup.key ? " (idempotency key " + *lookup.key + " of " + lookup.user + ")"
                                 : std::string()) +
                     "\n";
  for (const auto& e : events) text += "  " + json_text(e) + "\n";
  co_return ctx.out.ok(json::object{{"id", id}, {"events", std::move(events)}}, text);
}

}  // namespace pushonce::leader
