// `pushonce-leader dead-letters list|replay ID|purge` (docs/protocol.md).

#include <boost/json.hpp>
#include <charconv>
#include <optional>

#include "core/dead_letter_entry.hpp"
#include "core/lua/replay.hpp"
#include "core/message.hpp"
#include "core/redis/failure_of.hpp"
#include "leader/cli/admin.hpp"

namespace pushonce::leader {

namespace asio = boost::asio;
namespace json = boost::json;

namespace {

// The stream is trimmed near dead_letters_maxlen (MAXLEN ~ may keep a little more).
constexpr long long scan_limit = dead_letters_maxlen + 1000;

std::string field(const redis::reply& fields, std::string_view name) {
  return fields.field(name).str;
}

json::value parse_or_string(const std::string& text) {
  boost::system::error_code ec;
  auto v = json::parse(text, ec);
  return ec ? json::value(text) : v;
}

// The outbox a bus message came from ("q:QUEUE" or "bus:N"); "" for none of this layout's.
std::string outbox_of(const keys& k, const std::string& src) {
  if (src.rfind("q:", 0) == 0) return k.queue(src.substr(2), "outbox");
  unsigned shard = 0;
  const char* digits = src.data() + 4;
  const char* end = src.data() + src.size();
  if (src.rfind("bus:", 0) == 0 && std::from_chars(digits, end, shard).ptr == end &&
      src.size() > 4 && shard < k.shards())
    return k.bus(shard, "outbox");
  return {};
}

asio::awaitable<int> list(admin_context& ctx) {
  long long limit = ctx.vm.count("limit") ? ctx.vm["limit"].as<long long>() : 100;
  redis::command range{"XRANGE", ctx.k.plain("dead-letters"), "-", "+",
                       "COUNT",  std::to_string(limit)};
  auto r = co_await ctx.conn->exec(std::move(range));
  if (!r.ok()) co_return ctx.out.fail(failure_of(r));
  json::array items;
  std::string text;
  for (auto& e : r.value.elements) {
    const auto& f = e.at(1);
    json::object o{{"entry", e.at(0).str},
                   {"id", field(f, "id")},
                   {"user", field(f, "user")},
                   {"reason", field(f, "reason")},
                   {"attempts", std::stoll("0" + field(f, "attempts"))},
                   {"message", parse_or_string(field(f, "m"))}};
    text += field(f, "id") + "  to " + field(f, "user") + "  " + field(f, "reason") + "\n";
    items.push_back(std::move(o));
  }
  if (text.empty()) text = "no dead letters";
  co_return ctx.out.ok(json::object{{"dead_letters", std::move(items)}}, text);
}

// Redis's clock in ms (a replayed message is published again now, like the scripts do).
asio::awaitable<std::optional<long long>> redis_now_ms(redis::connection& conn) {
  redis::command time{"TIME"};
  auto t = co_await conn.exec(std::move(time));
  if (!t.ok() || t.value.elements.size() != 2) co_return std::nullopt;
  auto secs = t.value.elements[0].as_int(), micros = t.value.elements[1].as_int();
  if (!secs || !micros) co_return std::nullopt;
  co_return *secs * 1000 + *micros / 1000;
}

// A record of message `id` in its bucket of any shard (bounded: a bucket holds the records of
// 128 ids), or std::nullopt.
asio::awaitable<std::optional<lua::record_ref>> find_record(admin_context& ctx,
                                                            const std::string& id) {
  for (unsigned shard = 0; shard < ctx.k.shards(); ++shard) {
    const auto bucket = ctx.k.claim_bucket_in(shard, id);
    redis::command fields{"HKEYS", bucket};
    auto r = co_await ctx.conn->exec(std::move(fields));
    if (!r.ok()) continue;
    for (const auto& f : r.value.elements)
      if (f.str == id || f.str.starts_with(id + ".")) co_return lua::record_ref{bucket, f.str};
  }
  co_return std::nullopt;
}

// replay.lua decides on the claim record (docs/data-model.md): only a message still marked
// dead, or whose mark has expired, is re-driven, and every listed entry of the id goes with
// it; a delivered or already replayed one is refused (not_dead) and nothing is written.
asio::awaitable<int> replay(admin_context& ctx, std::string id) {
  redis::command range{"XRANGE", ctx.k.plain("dead-letters"), "-", "+",
                       "COUNT",  std::to_string(scan_limit)};
  auto r = co_await ctx.conn->exec(std::move(range));
  if (!r.ok()) co_return ctx.out.fail(failure_of(r));
  lua::replay_request req;
  req.id = id;
  req.dedup_window = ctx.retention.dedup_window;
  const redis::reply* last = nullptr;
  for (auto& e : r.value.elements)
    if (field(e.at(1), "id") == id) {
      req.entries.push_back(e.at(0).str);
      last = &e;
    }
  const bool cluster = ctx.conn->is_cluster();
  if (last) {
    const auto& f = last->at(1);
    req.user = field(f, "user");
    req.outbox = outbox_of(ctx.k, field(f, "src"));
    req.message = field(f, "m");
    if (req.user.empty() || req.outbox.empty())
      co_return ctx.out.fail(
          {errc::bad_request, "dead letter " + id + " is malformed and cannot be replayed"});
    // Published again now: claim.lua would not deliver a message without a claim record that
    // is older than the dedup window.
    if (auto parsed = parse_bus_message(req.message)) {
      auto now = co_await redis_now_ms(*ctx.conn);
      if (!now) co_return ctx.out.fail({errc::internal, "TIME: unexpected reply"});
      req.message = with_publish_time(*parsed, *now);
    }
  } else if (cluster) {
    // Without an entry there is no user, so no record to look at on a cluster.
    co_return ctx.out.fail({errc::not_found, "no dead letter with id " + id});
  } else {
    // No entry names the user and the message, so neither names the record: the id's
    // record is looked for in its bucket of each shard (a field "<id>.<digest>", or the
    // bare id of an earlier layout), for replay.lua to say delivered, replayed or unknown.
    req.record = co_await find_record(ctx, id);
  }
  auto in = lua::replay_for(ctx.k, cluster, req);
  auto replayed = co_await lua::run_script(*ctx.conn, std::move(in));
  if (!replayed.ok()) co_return ctx.out.fail(failure_of(replayed));
  auto removed = replayed.value.as_int().value_or(0);
  if (cluster) {
    // The record now refuses another replay; the rest lives in other slots. A failure here
    // leaves the entries listed: running the replay again finishes it (the record dedups).
    auto more = co_await ctx.conn->exec_all(lua::replay_followups(ctx.k, req));
    for (auto& x : more)
      if (!x.ok()) co_return ctx.out.fail(failure_of(x));
  }
  co_return ctx.out.ok(json::object{{"id", id}, {"replayed", true}, {"entries_removed", removed}},
                       "replayed message " + id);
}

asio::awaitable<int> purge(admin_context& ctx) {
  std::vector<redis::command> cmds{{"XLEN", ctx.k.plain("dead-letters")},
                                   {"DEL", ctx.k.plain("dead-letters")}};
  auto rs = co_await ctx.conn->exec_all(std::move(cmds));
  for (auto& x : rs)
    if (!x.ok()) co_return ctx.out.fail(failure_of(x));
  auto n = rs[0].value.integer;
  co_return ctx.out.ok(json::object{{"purged", n}},
                       "purged " + std::to_string(n) + " dead letters");
}

}  // namespace

asio::awaitable<int> run_dead_letters(admin_context& ctx) {
  auto sub = ctx.args.empty() ? std::string() : ctx.args[0];
  if (sub == "list" && ctx.args.size() == 1) co_return co_await list(ctx);
  if (sub == "replay" && ctx.args.size() == 2) co_return co_await replay(ctx, ctx.args[1]);
  if (sub == "purge" && ctx.args.size() == 1) co_return co_await purge(ctx);
  co_return ctx.out.usage("usage: pushonce-leader dead-letters list | replay ID | purge");
}

}  // namespace pushonce::leader
