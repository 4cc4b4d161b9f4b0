#include "core/queue_api.hpp"

#include <algorithm>
#include <map>

#include "core/names.hpp"
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

// Runs a script; keys/args are built by the caller outside the co_await (GCC 12).
asio::awaitable<redis::result> run(redis::connection& c, const char* name, strings keys,
                                   strings args) {
  const auto& s = redis::get_script(name);
  auto r = co_await redis::eval(c, s, std::move(keys), std::move(args));
  co_return r;
}

}  // namespace

queue_api::queue_api(std::shared_ptr<redis::connection> conn, keys k, retention r)
    : conn_(std::move(conn)), keys_(std::move(k)), retention_(r) {}

asio::awaitable<outcome<join_result>> queue_api::join(std::string queue, std::string user) {
  if (!valid_name(queue)) co_return bad_name("queue", queue);
  if (!valid_name(user)) co_return bad_name("user", user);
  strings k{keys_.queue(queue, "waiting"), keys_.queue(queue, "assigned"),
            keys_.queue(queue, "ticket"), keys_.queue(queue, "registered"),
            keys_.queue(queue, "events")};
  strings a{user, keys_.wake_channel(), queue};
  auto r = co_await run(*conn_, "join", std::move(k), std::move(a));
  if (!r.ok()) co_return failure_of(r);
  co_return join_result{r.value.at(0).integer, r.value.at(1).integer, r.value.at(2).integer};
}

asio::awaitable<outcome<none>> queue_api::register_queues(std::vector<std::string> queues) {
  std::vector<redis::command> cmds;
  for (const auto& q : queues) {
    if (!valid_name(q)) co_return bad_name("queue", q);
    cmds.push_back({"SET", keys_.queue(q, "registered"), "1"});
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

asio::awaitable<outcome<none>> queue_api::leave(std::string queue, std::string user) {
  if (!valid_name(queue)) co_return bad_name("queue", queue);
  if (!valid_name(user)) co_return bad_name("user", user);
  strings k{keys_.queue(queue, "waiting"), keys_.queue(queue, "events")};
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
  strings k{keys_.queue(queue, "res:meta"),   keys_.queue(queue, "res:free"),
            keys_.queue(queue, "res:seq"),    keys_.queue(queue, "res:holder"),
            keys_.queue(queue, "assigned"),   keys_.queue(queue, "pending"),
            keys_.queue(queue, "pending:ids")};
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
            keys_.queue(queue, "pending"),    keys_.queue(queue, "pending:ids")};
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

asio::awaitable<outcome<std::vector<assignment>>> queue_api::assign_batch(
    std::string queue, long long source, long long fencing_token, long long accept_timeout_ms,
    long long max) {
  if (!valid_name(queue)) co_return bad_name("queue", queue);
  strings k{keys_.queue(queue, "waiting"),    keys_.queue(queue, "assigned"),
            keys_.queue(queue, "res:meta"),   keys_.queue(queue, "res:free"),
            keys_.queue(queue, "res:holder"), keys_.queue(queue, "seq"),
            keys_.queue(queue, "outbox"),     keys_.queue(queue, "fence"),
            keys_.queue(queue, "pending"),    keys_.queue(queue, "pending:ids"),
            keys_.queue(queue, "events")};
  strings a{queue,
            std::to_string(source),
            std::to_string(fencing_token),
            std::to_string(accept_timeout_ms),
            std::to_string(retention_.outbox.count()),
            keys_.bus_channel(),
            keys_.wake_channel(),
            std::to_string(max)};
  auto r = co_await run(*conn_, "assign", std::move(k), std::move(a));
  if (!r.ok()) co_return failure_of(r);
  co_return assignments_of(r.value, 3);
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
            keys_.queue(queue, "assigned")};
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
            keys_.queue(queue, "fence")};
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
