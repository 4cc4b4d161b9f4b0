// `pushonce-leader dead-letters list|replay ID|purge` (docs/protocol.md).

#include <boost/json.hpp>

#include "core/lua/claim.hpp"
#include "core/message.hpp"
#include "leader/admin.hpp"

namespace pushonce::leader {

namespace asio = boost::asio;
namespace json = boost::json;

namespace {

constexpr long long scan_limit = 10000;  // the dead-letter stream is trimmed near this

std::string field(const redis::reply& fields, std::string_view name) {
  return fields.field(name).str;
}

json::value parse_or_string(const std::string& text) {
  boost::system::error_code ec;
  auto v = json::parse(text, ec);
  return ec ? json::value(text) : v;
}

// The outbox a bus message came from ("q:QUEUE" or "bus:N").
std::string outbox_of(const keys& k, const std::string& src) {
  if (src.rfind("q:", 0) == 0) return k.queue(src.substr(2), "outbox");
  if (src.rfind("bus:", 0) == 0)
    return k.bus(static_cast<unsigned>(std::stoul(src.substr(4))), "outbox");
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

asio::awaitable<int> replay(admin_context& ctx, std::string id) {
  redis::command range{"XRANGE", ctx.k.plain("dead-letters"), "-", "+",
                       "COUNT",  std::to_string(scan_limit)};
  auto r = co_await ctx.conn->exec(std::move(range));
  if (!r.ok()) co_return ctx.out.fail(failure_of(r));
  const redis::reply* found = nullptr;
  for (auto& e : r.value.elements)
    if (field(e.at(1), "id") == id) found = &e;
  if (!found) co_return ctx.out.fail({"not_found", "no dead letter with id " + id});
  const auto& f = found->at(1);
  auto user = field(f, "user"), src = field(f, "src"), m = field(f, "m");
  auto outbox = outbox_of(ctx.k, src);
  if (user.empty() || outbox.empty())
    co_return ctx.out.fail(
        {"bad_request", "dead letter " + id + " is malformed and cannot be replayed"});
  // Published again now (Redis's clock, like the scripts): claim.lua would not deliver a
  // message without a claim record that is older than the dedup window.
  if (auto parsed = parse_bus_message(m)) {
    redis::command time{"TIME"};
    auto t = co_await ctx.conn->exec(std::move(time));
    if (!t.ok()) co_return ctx.out.fail(failure_of(t));
    if (t.value.elements.size() != 2)
      co_return ctx.out.fail({"internal", "TIME: unexpected reply"});
    auto secs = t.value.elements[0].as_int(), micros = t.value.elements[1].as_int();
    if (!secs || !micros) co_return ctx.out.fail({"internal", "TIME: unexpected reply"});
    m = with_publish_time(*parsed, *secs * 1000 + *micros / 1000);
  }
  // The claim forgets the message (it was marked dead); back into its outbox and onto the
  // bus, where the normal claim → deliver path takes it; then off the dead-letter list.
  auto record = lua::claim_record_ref(ctx.k, lua::records_on(ctx.conn->is_cluster()), user, id);
  std::vector<redis::command> cmds{lua::record_forget(record),
                                   {"XADD", outbox, "*", "m", m},
                                   {"PUBLISH", ctx.k.bus_channel(), m},
                                   {"XDEL", ctx.k.plain("dead-letters"), found->at(0).str}};
  auto rs = co_await ctx.conn->exec_all(std::move(cmds));
  for (auto& x : rs)
    if (!x.ok()) co_return ctx.out.fail(failure_of(x));
  co_return ctx.out.ok(json::object{{"id", id}, {"replayed", true}}, "replayed message " + id);
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
