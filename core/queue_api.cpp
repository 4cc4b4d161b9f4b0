#include "core/queue_api.hpp"

#include <algorithm>
#include <map>

#include "core/lua/presence.hpp"
#include "core/names.hpp"
#include "core/queue_settings.hpp"
#include "core/redis/failure_of.hpp"
#include "core/redis/scripts.hpp"

namespace pushonce {

namespace asio = boost::asio;
using strings = std::vector<std::string>;

namespace {

failure bad_name(const char* what, const std::string& name) {
  return {errc::bad_request, std::string("invalid ") + what + " '" + name +
                                 "': use 1-128 characters of A-Z a-z 0-9 . _ @ -"};
}

// Runs a script; keys/args are built by the caller outside the co_await
// (GCC 12: docs/architecture.md "Coroutines and GCC 12").
asio::awaitable<redis::result> run(redis::connection& c, const char* name, strings keys,
                                   strings args) {
  const auto& s = redis::get_script(name);
  auto r = co_await redis::eval(c, s, std::move(keys), std::move(args));
  co_return r;
}

}  // namespace

queue_api::queue_api(std::shared_ptr<redis::connection> conn, keys k, retention r)
    : conn_(std::move(conn)), keys_(std::move(k)), retention_(r) {}

asio::awaitable<outcome<join_result>> queue_api::join(std::string queue, std::string user,
                                                      std::optional<pow_use> pow) {
  if (!valid_name(queue)) co_return bad_name("queue", queue);
  if (!valid_name(user)) co_return bad_name("user", user);
  strings k{keys_.queue(queue, "waiting"),     keys_.queue(queue, "assigned"),
            keys_.queue(queue, "ticket"),      keys_.queue(queue, "registered"),
            keys_.queue(queue, "events"),      keys_.queue(queue, "settings"),
            keys_.queue(queue, "prequeue"),    keys_.queue(queue, "stats"),
            keys_.queue(queue, "prequeue:seq")};
  strings a{user, keys_.wake_channel(), queue};
  if (pow) {
    k.push_back(keys_.queue(queue, "pow:" + pow->token));
    a.push_back(std::to_string(pow->ttl_ms));
  }
  auto r = co_await run(*conn_, "join", std::move(k), std::move(a));
  if (!r.ok()) co_return failure_of(r);
  join_result out{r.value.at(0).integer, r.value.at(1).integer, r.value.at(2).integer,
                  std::nullopt};
  if (out.position == 0) out.opens_at = r.value.at(3).integer;
  co_return out;
}

asio::awaitable<outcome<none>> queue_api::joined_without_session(std::string user) {
  if (!valid_name(user)) co_return bad_name("user", user);
  std::vector<redis::command> cmds;
  cmds.push_back(lua::presence_joined_command(keys_, user));
  auto rs = co_await redis::eval_all(*conn_, redis::get_script("presence_joined"), std::move(cmds));
  if (!rs.at(0).ok()) co_return failure_of(rs[0]);
  co_return none{};
}

asio::awaitable<outcome<none>> queue_api::register_queues(std::vector<std::string> queues,
                                                          long long accept_timeout_ms) {
  std::vector<redis::command> cmds;
  for (const auto& q : queues) {
    if (!valid_name(q)) co_return bad_name("queue", q);
    cmds.push_back({"SET", keys_.queue(q, "registered"), registered_value(accept_timeout_ms)});
  }
  // The namespace's list of queues, which every leader's --queue list must cover
  // (leader/queue_list.hpp). Its own slot on a cluster: a plain pipelined command.
  redis::command all{"SADD", keys_.plain("queues")};
  all.insert(all.end(), queues.begin(), queues.end());
  if (!queues.empty()) cmds.push_back(std::move(all));
  auto rs = co_await conn_->exec_all(std::move(cmds));
  for (auto& r : rs)
    if (!r.ok()) co_return failure_of(r);
  co_return none{};
}

asio::awaitable<outcome<lua::settings_reply>> queue_api::settings(lua::settings_call c) {
  if (!valid_name(c.queue)) co_return bad_name("queue", c.queue);
  std::vector<redis::command> cmds{lua::settings_command(keys_, c)};
  auto rs = co_await redis::eval_all(*conn_, redis::get_script("settings"), std::move(cmds));
  auto& r = rs.at(0);
  if (!r.ok()) co_return failure_of(r);
  auto parsed = lua::parse_settings_reply(r.value);
  if (!parsed) co_return failure{errc::internal, "settings: unexpected reply"};
  co_return *parsed;
}

asio::awaitable<outcome<std::vector<std::string>>> queue_api::registered_queues() {
  redis::command cmd{"SMEMBERS", keys_.plain("queues")};
  auto r = co_await conn_->exec(std::move(cmd));
  if (!r.ok()) co_return failure_of(r);
  std::vector<std::string> out;
  for (auto& e : r.value.elements) out.push_back(std::move(e.str));
  std::sort(out.begin(), out.end());
  co_return out;
}

asio::awaitable<outcome<none>> queue_api::leave(std::string queue, std::string user) {
  if (!valid_name(queue)) co_return bad_name("queue", queue);
  if (!valid_name(user)) co_return bad_name("user", user);
  strings k{keys_.queue(queue, "waiting"), keys_.queue(queue, "events"),
            keys_.queue(queue, "prequeue"), keys_.queue(queue, "prequeue:draw")};
  strings a{user, keys_.wake_channel(), queue};
  auto r = co_await run(*conn_, "leave", std::move(k), std::move(a));
  if (!r.ok()) co_return failure_of(r);
  co_return none{};
}

asio::awaitable<outcome<long long>> queue_api::position(std::string queue, std::string user) {
  if (!valid_name(queue)) co_return bad_name("queue", queue);
  if (!valid_name(user)) co_return bad_name("user", user);
  redis::command cmd{"ZRANK", keys_.queue(queue, "waiting"), user};
  auto r = co_await conn_->exec(std::move(cmd));
  if (!r.ok()) co_return failure_of(r);
  if (r.value.is_nil()) co_return failure{errc::not_queued, user + " is not in queue " + queue};
  co_return r.value.integer + 1;
}

asio::awaitable<outcome<queue_standing>> queue_api::standing(std::string queue, std::string user) {
  if (!valid_name(queue)) co_return bad_name("queue", queue);
  if (!valid_name(user)) co_return bad_name("user", user);
  strings k{keys_.queue(queue, "waiting"), keys_.queue(queue, "events"),
            keys_.queue(queue, "prequeue"), keys_.queue(queue, "settings")};
  strings a{user};
  auto r = co_await run(*conn_, "standing", std::move(k), std::move(a));
  if (!r.ok()) co_return failure_of(r);
  const auto& e = r.value.elements;
  if (e.size() != 5) co_return failure{errc::internal, "standing: unexpected reply"};
  queue_standing out{e[0].integer, e[1].integer, e[2].integer, e[3].integer != 0, std::nullopt};
  if (out.prequeued && e[4].integer > 0) out.opens_at = e[4].integer;
  co_return out;
}

asio::awaitable<outcome<queue_positions>> queue_api::positions(std::string queue,
                                                               std::vector<std::string> users) {
  if (!valid_name(queue)) co_return bad_name("queue", queue);
  for (auto& u : users)
    if (!valid_name(u)) co_return bad_name("user", u);
  strings k{keys_.queue(queue, "waiting"), keys_.queue(queue, "events")};
  auto r = co_await run(*conn_, "positions", std::move(k), std::move(users));
  if (!r.ok()) co_return failure_of(r);
  const auto& e = r.value.elements;
  if (e.empty() || e.size() % 2 != 1)
    co_return failure{errc::internal, "positions: unexpected reply"};
  queue_positions out;
  out.seq = e[0].integer;
  for (std::size_t i = 1; i + 1 < e.size(); i += 2)
    out.users.push_back({e[i].integer, e[i + 1].integer});
  co_return out;
}

asio::awaitable<outcome<queue_listing>> queue_api::list(std::string queue, long long limit,
                                                        long long offset) {
  if (!valid_name(queue)) co_return bad_name("queue", queue);
  if (limit <= 0) limit = 100;
  if (offset < 0) offset = 0;
  std::vector<redis::command> cmds{{"ZCARD", keys_.queue(queue, "waiting")},
                                   {"ZRANGE", keys_.queue(queue, "waiting"), std::to_string(offset),
                                    std::to_string(offset + limit - 1)}};
  auto rs = co_await conn_->exec_all(std::move(cmds));
  for (auto& r : rs)
    if (!r.ok()) co_return failure_of(r);
  queue_listing out;
  out.length = rs[0].value.integer;
  for (auto& e : rs[1].value.elements) out.users.push_back(std::move(e.str));
  co_return out;
}

asio::awaitable<outcome<std::vector<std::string>>> queue_api::add_resources(
    std::string queue, std::vector<std::string> ids, std::string meta_json) {
  if (!valid_name(queue)) co_return bad_name("queue", queue);
  if (ids.empty()) co_return failure{errc::bad_request, "no resource id given"};
  for (auto& id : ids)
    if (!valid_name(id)) co_return bad_name("resource id", id);
  strings k{keys_.queue(queue, "res:meta"), keys_.queue(queue, "res:free"),
            keys_.queue(queue, "res:seq")};
  strings a{keys_.wake_channel(), queue, meta_json};
  a.insert(a.end(), ids.begin(), ids.end());
  auto r = co_await run(*conn_, "resource_add", std::move(k), std::move(a));
  if (!r.ok()) co_return failure_of(r);
  co_return ids;
}

asio::awaitable<outcome<none>> queue_api::release_resource(std::string queue, std::string id) {
  if (!valid_name(queue)) co_return bad_name("queue", queue);
  if (!valid_name(id)) co_return bad_name("resource id", id);
  strings k{keys_.queue(queue, "res:meta"),    keys_.queue(queue, "res:free"),
            keys_.queue(queue, "res:seq"),     keys_.queue(queue, "res:holder"),
            keys_.queue(queue, "assigned"),    keys_.queue(queue, "pending"),
            keys_.queue(queue, "pending:ids"), keys_.queue(queue, "admissions")};
  strings a{id, keys_.wake_channel(), queue};
  auto r = co_await run(*conn_, "resource_release", std::move(k), std::move(a));
  if (!r.ok()) co_return failure_of(r);
  co_return none{};
}

asio::awaitable<outcome<none>> queue_api::remove_resource(std::string queue, std::string id) {
  if (!valid_name(queue)) co_return bad_name("queue", queue);
  if (!valid_name(id)) co_return bad_name("resource id", id);
  strings k{keys_.queue(queue, "res:meta"),   keys_.queue(queue, "res:free"),
            keys_.queue(queue, "res:holder"), keys_.queue(queue, "assigned"),
            keys_.queue(queue, "pending"),    keys_.queue(queue, "pending:ids"),
            keys_.queue(queue, "admissions")};
  strings a{id};
  auto r = co_await run(*conn_, "resource_remove", std::move(k), std::move(a));
  if (!r.ok()) co_return failure_of(r);
  co_return none{};
}

asio::awaitable<outcome<std::vector<resource_info>>> queue_api::list_resources(std::string queue) {
  if (!valid_name(queue)) co_return bad_name("queue", queue);
  std::vector<redis::command> cmds{{"HGETALL", keys_.queue(queue, "res:meta")},
                                   {"HGETALL", keys_.queue(queue, "res:holder")},
                                   {"ZRANGE", keys_.queue(queue, "res:free"), "0", "-1"}};
  auto rs = co_await conn_->exec_all(std::move(cmds));
  for (auto& r : rs)
    if (!r.ok()) co_return failure_of(r);
  std::map<std::string, std::string> holders;
  const auto& h = rs[1].value.elements;
  for (std::size_t i = 0; i + 1 < h.size(); i += 2) holders[h[i].str] = h[i + 1].str;
  std::vector<resource_info> out;
  const auto& m = rs[0].value.elements;
  for (std::size_t i = 0; i + 1 < m.size(); i += 2) {
    resource_info info;
    info.id = m[i].str;
    info.meta_json = m[i + 1].str.empty() ? "null" : m[i + 1].str;
    if (auto it = holders.find(info.id); it != holders.end()) {
      info.assigned = true;
      info.user = it->second;
    }
    out.push_back(std::move(info));
  }
  std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.id < b.id; });
  co_return out;
}

asio::awaitable<outcome<std::pair<long long, long long>>> queue_api::resource_counts(
    std::string queue) {
  if (!valid_name(queue)) co_return bad_name("queue", queue);
  std::vector<redis::command> cmds{{"ZCARD", keys_.queue(queue, "res:free")},
                                   {"HLEN", keys_.queue(queue, "res:holder")}};
  auto rs = co_await conn_->exec_all(std::move(cmds));
  for (auto& r : rs)
    if (!r.ok()) co_return failure_of(r);
  co_return std::pair{rs[0].value.integer, rs[1].value.integer};
}

asio::awaitable<outcome<long long>> queue_api::source_index(std::string queue) {
  if (!valid_name(queue)) co_return bad_name("queue", queue);
  strings k{keys_.plain("sources")};
  strings a{"q:" + queue};
  auto r = co_await run(*conn_, "source", std::move(k), std::move(a));
  if (!r.ok()) co_return failure_of(r);
  co_return r.value.integer;
}

namespace {
// Every `width` items of a flat script reply as one assignment (id, user, resource first).
std::vector<assignment> assignments_of(const redis::reply& r, std::size_t width) {
  std::vector<assignment> out;
  const auto& e = r.elements;
  out.reserve(e.size() / width);
  for (std::size_t i = 0; i + width <= e.size(); i += width)
    out.push_back({e[i].str, e[i + 1].str, e[i + 2].str});
  return out;
}
}  // namespace

asio::awaitable<redis::result> queue_api::assign_call(std::string queue, long long source,
                                                      long long fencing_token,
                                                      long long accept_timeout_ms, long long max,
                                                      strings extra) {
  strings k{keys_.queue(queue, "waiting"),     keys_.queue(queue, "assigned"),
            keys_.queue(queue, "res:meta"),    keys_.queue(queue, "res:free"),
            keys_.queue(queue, "res:holder"),  keys_.queue(queue, "seq"),
            keys_.queue(queue, "outbox"),      keys_.queue(queue, "fence"),
            keys_.queue(queue, "pending"),     keys_.queue(queue, "pending:ids"),
            keys_.queue(queue, "events"),      keys_.queue(queue, "settings"),
            keys_.queue(queue, "rate"),        keys_.queue(queue, "admissions"),
            keys_.queue(queue, "admissions:t")};
  strings a{queue,
            std::to_string(source),
            std::to_string(fencing_token),
            std::to_string(accept_timeout_ms),
            std::to_string(retention_.outbox.count()),
            keys_.bus_channel(),
            keys_.wake_channel(),
            std::to_string(max),
            std::to_string(admission_record_.count())};
  a.insert(a.end(), std::make_move_iterator(extra.begin()), std::make_move_iterator(extra.end()));
  auto r = co_await run(*conn_, "assign", std::move(k), std::move(a));
  co_return r;
}

asio::awaitable<outcome<std::vector<assignment>>> queue_api::assign_batch(
    std::string queue, long long source, long long fencing_token, long long accept_timeout_ms,
    long long max) {
  if (!valid_name(queue)) co_return bad_name("queue", queue);
  auto r =
      co_await assign_call(std::move(queue), source, fencing_token, accept_timeout_ms, max, {});
  if (!r.ok()) co_return failure_of(r);
  co_return assignments_of(r.value, 3);
}

asio::awaitable<outcome<admission::assign_plan>> queue_api::plan_assign(std::string queue,
                                                                        long long max) {
  if (!valid_name(queue)) co_return bad_name("queue", queue);
  strings k{keys_.queue(queue, "waiting"),    keys_.queue(queue, "assigned"),
            keys_.queue(queue, "res:meta"),   keys_.queue(queue, "res:free"),
            keys_.queue(queue, "res:holder"), keys_.queue(queue, "seq"),
            keys_.queue(queue, "settings")};
  strings a{std::to_string(max)};
  auto r = co_await run(*conn_, "assign_plan", std::move(k), std::move(a));
  if (!r.ok()) co_return failure_of(r);
  strings items;
  for (const auto& e : r.value.elements)
    items.push_back(e.kind == redis::reply::type::integer ? std::to_string(e.integer) : e.str);
  auto plan = admission::plan_of_reply(items);
  if (!plan) co_return failure{errc::internal, "assign_plan.lua: unexpected reply"};
  co_return std::move(*plan);
}

asio::awaitable<outcome<std::optional<std::vector<assignment>>>> queue_api::assign_planned(
    std::string queue, long long source, long long fencing_token, long long accept_timeout_ms,
    long long max, admission::assign_plan plan, std::vector<std::string> tokens) {
  using result_type = std::optional<std::vector<assignment>>;
  if (!valid_name(queue)) co_return bad_name("queue", queue);
  auto extra = admission::plan_args(plan, tokens);
  auto r = co_await assign_call(std::move(queue), source, fencing_token, accept_timeout_ms, max,
                                std::move(extra));
  if (!r.ok()) co_return failure_of(r);
  if (r.value.elements.size() == 1 && r.value.elements[0].str == "stale") co_return result_type{};
  co_return result_type{assignments_of(r.value, 3)};
}

asio::awaitable<outcome<std::optional<admission::record>>> queue_api::admission_record(
    std::string queue, std::string id) {
  using result_type = std::optional<admission::record>;
  if (!valid_name(queue)) co_return bad_name("queue", queue);
  redis::command cmd{"HGET", keys_.queue(queue, "admissions"), std::move(id)};
  auto r = co_await conn_->exec(std::move(cmd));
  if (!r.ok()) co_return failure_of(r);
  if (!r.value.is_string()) co_return result_type{};
  co_return admission::record_of(r.value.str);
}

asio::awaitable<outcome<std::map<long long, std::string>>> queue_api::source_queues() {
  redis::command cmd{"HGETALL", keys_.plain("sources")};
  auto r = co_await conn_->exec(std::move(cmd));
  if (!r.ok()) co_return failure_of(r);
  std::map<long long, std::string> out;
  const auto& e = r.value.elements;
  for (std::size_t i = 0; i + 1 < e.size(); i += 2) {
    if (e[i].str.rfind("q:", 0) != 0) continue;
    long long idx = 0;
    try {
      idx = std::stoll(e[i + 1].str);
    } catch (const std::exception&) {
      continue;
    }
    out[idx] = e[i].str.substr(2);
  }
  co_return out;
}

asio::awaitable<outcome<std::optional<assignment>>> queue_api::assign_one(
    std::string queue, long long source, long long fencing_token, long long accept_timeout_ms) {
  auto r = co_await assign_batch(std::move(queue), source, fencing_token, accept_timeout_ms, 1);
  if (!r) co_return r.error();
  if (r.value().empty()) co_return std::optional<assignment>{};
  co_return std::optional<assignment>{std::move(r.value().front())};
}

asio::awaitable<outcome<std::pair<std::string, std::string>>> queue_api::accept(std::string queue,
                                                                                std::string user,
                                                                                std::string id) {
  if (!valid_name(queue)) co_return bad_name("queue", queue);
  if (!valid_name(user)) co_return bad_name("user", user);
  strings k{keys_.queue(queue, "pending"), keys_.queue(queue, "pending:ids"),
            keys_.queue(queue, "assigned"), keys_.queue(queue, "admissions")};
  strings a{user, id};
  auto r = co_await run(*conn_, "accept", std::move(k), std::move(a));
  if (!r.ok()) co_return failure_of(r);
  co_return std::pair{r.value.at(0).str, r.value.at(1).str};
}

asio::awaitable<outcome<std::vector<assignment>>> queue_api::expire_batch(std::string queue,
                                                                          long long source,
                                                                          long long fencing_token,
                                                                          long long max) {
  strings k{keys_.queue(queue, "pending"),  keys_.queue(queue, "pending:ids"),
            keys_.queue(queue, "assigned"), keys_.queue(queue, "res:free"),
            keys_.queue(queue, "res:seq"),  keys_.queue(queue, "res:holder"),
            keys_.queue(queue, "seq"),      keys_.queue(queue, "outbox"),
            keys_.queue(queue, "fence"),    keys_.queue(queue, "admissions")};
  strings a{queue,
            std::to_string(source),
            std::to_string(fencing_token),
            std::to_string(retention_.outbox.count()),
            keys_.bus_channel(),
            keys_.wake_channel(),
            std::to_string(max)};
  auto r = co_await run(*conn_, "expire", std::move(k), std::move(a));
  if (!r.ok()) co_return failure_of(r);
  co_return assignments_of(r.value, 4);
}

}  // namespace pushonce
