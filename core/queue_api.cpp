#include "core/queue_api.hpp"

#include <algorithm>
#include <map>

#include "core/lua/capacity.hpp"
#include "core/lua/join.hpp"
#include "core/lua/positions.hpp"
#include "core/lua/presence.hpp"
#include "core/lua/resource.hpp"
#include "core/lua/source.hpp"
#include "core/names.hpp"
#include "core/queue_settings.hpp"
#include "core/redis/failure_of.hpp"

namespace pushonce {

namespace asio = boost::asio;

failure queue_api::bad_name(const char* what, const std::string& name) {
  return {errc::bad_request, std::string("invalid ") + what + " '" + name +
                                 "': use 1-128 characters of A-Z a-z 0-9 . _ @ -"};
}

queue_api::queue_api(std::shared_ptr<redis::connection> conn, keys k, retention r)
    : conn_(std::move(conn)), keys_(std::move(k)), retention_(r) {}

asio::awaitable<outcome<join_result>> queue_api::join(std::string queue, std::string user,
                                                      std::optional<pow_use> pow) {
  if (!valid_name(queue)) co_return bad_name("queue", queue);
  if (!valid_name(user)) co_return bad_name("user", user);
  std::optional<std::pair<std::string, long long>> pow_mark;
  if (pow) pow_mark.emplace(pow->token, pow->ttl_ms);
  auto in = lua::join_for(keys_, queue, user, pow_mark);
  auto r = co_await lua::run_script(*conn_, std::move(in));
  auto joined = lua::join_reply_of(r);
  if (!joined) co_return joined.error();
  const auto& j = joined.value();
  join_result out{j.position, j.ticket, j.event, std::nullopt};
  if (out.position == 0) out.opens_at = j.opens_at;
  co_return out;
}

asio::awaitable<outcome<none>> queue_api::joined_without_session(std::string user) {
  if (!valid_name(user)) co_return bad_name("user", user);
  auto in = lua::presence_joined_for(keys_, user);
  auto r = co_await lua::run_script(*conn_, std::move(in));
  if (!r.ok()) co_return failure_of(r);
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
  auto in = lua::settings_for(keys_, c);
  auto r = co_await lua::run_script(*conn_, std::move(in));
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
  auto in = lua::leave_for(keys_, queue, user);
  auto r = co_await lua::run_script(*conn_, std::move(in));
  auto left = lua::leave_reply_of(r);
  if (!left) co_return left.error();
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
  auto in = lua::standing_for(keys_, queue, user);
  auto r = co_await lua::run_script(*conn_, std::move(in));
  auto st = lua::standing_reply_of(r);
  if (!st) co_return st.error();
  const auto& e = st.value();
  queue_standing out{e.event, e.position, e.ticket, e.prequeued, std::nullopt};
  if (out.prequeued && e.opens_at > 0) out.opens_at = e.opens_at;
  co_return out;
}

asio::awaitable<outcome<queue_positions>> queue_api::positions(std::string queue,
                                                               std::vector<std::string> users) {
  if (!valid_name(queue)) co_return bad_name("queue", queue);
  for (auto& u : users)
    if (!valid_name(u)) co_return bad_name("user", u);
  auto in = lua::positions_for(keys_, queue, std::move(users));
  auto r = co_await lua::run_script(*conn_, std::move(in));
  if (!r.ok()) co_return failure_of(r);
  auto out = lua::positions_of(r.value);
  if (!out) co_return failure{errc::internal, "positions: unexpected reply"};
  co_return std::move(*out);
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
  auto in = lua::resource_add_for(keys_, queue, ids, meta_json);
  auto r = co_await lua::run_script(*conn_, std::move(in));
  auto added = lua::resource_add_reply(r);
  if (!added) co_return added.error();
  co_return ids;
}

asio::awaitable<outcome<none>> queue_api::release_resource(std::string queue, std::string id) {
  if (!valid_name(queue)) co_return bad_name("queue", queue);
  if (!valid_name(id) && !admission::is_pass_name(id)) co_return bad_name("resource id", id);
  auto source = co_await source_index(queue);
  if (!source) co_return source.error();
  auto in = lua::resource_release_for(keys_, queue,
                                      {.resource = std::move(id),
                                       .admission = {},
                                       .source = source.value(),
                                       .reason = "released",
                                       .outbox_retention_ms = retention_.outbox.count()});
  auto r = co_await lua::run_script(*conn_, std::move(in));
  auto out = lua::resource_release_reply(r);
  if (!out) co_return out.error();
  co_return none{};
}

asio::awaitable<outcome<lua::release_reply>> queue_api::release_admission(std::string queue,
                                                                          std::string id,
                                                                          std::string reason) {
  if (!valid_name(queue)) co_return bad_name("queue", queue);
  if (admission::source_of_id(id) < 0) co_return failure{errc::not_found, "no admission " + id};
  auto source = co_await source_index(queue);
  if (!source) co_return source.error();
  auto in = lua::resource_release_for(keys_, queue,
                                      {.resource = {},
                                       .admission = std::move(id),
                                       .source = source.value(),
                                       .reason = std::move(reason),
                                       .outbox_retention_ms = retention_.outbox.count()});
  auto r = co_await lua::run_script(*conn_, std::move(in));
  co_return lua::resource_release_reply(r);
}

asio::awaitable<outcome<admission::record>> queue_api::renew_admission(
    std::string queue, std::string id, std::optional<long long> at_ms) {
  if (!valid_name(queue)) co_return bad_name("queue", queue);
  if (admission::source_of_id(id) < 0) co_return failure{errc::not_found, "no admission " + id};
  auto in = lua::admission_for(keys_, queue, std::move(id), true, at_ms);
  auto r = co_await lua::run_script(*conn_, std::move(in));
  auto a = lua::admission_reply_of(r);
  if (!a) co_return a.error();
  co_return admission::record{a.value().state, a.value().user, a.value().resource,
                              a.value().expires_at};
}

asio::awaitable<outcome<std::vector<lua::live_admission>>> queue_api::live_admissions(
    std::string queue, std::string user) {
  if (!valid_name(queue)) co_return bad_name("queue", queue);
  if (!user.empty() && !valid_name(user)) co_return bad_name("user", user);
  auto in = lua::admissions_list_for(keys_, queue, std::move(user));
  auto r = co_await lua::run_script(*conn_, std::move(in));
  if (!r.ok()) co_return failure_of(r);
  co_return lua::admissions_list_of(r.value);
}

asio::awaitable<outcome<long long>> queue_api::next_due_ms(std::string queue) {
  if (!valid_name(queue)) co_return bad_name("queue", queue);
  auto in = lua::next_due_for(keys_, queue);
  auto r = co_await lua::run_script(*conn_, std::move(in));
  if (!r.ok()) co_return failure_of(r);
  co_return r.value.integer;
}

asio::awaitable<outcome<none>> queue_api::remove_resource(std::string queue, std::string id) {
  if (!valid_name(queue)) co_return bad_name("queue", queue);
  if (!valid_name(id)) co_return bad_name("resource id", id);
  auto in = lua::resource_remove_for(keys_, queue, std::move(id));
  auto r = co_await lua::run_script(*conn_, std::move(in));
  co_return lua::resource_remove_reply(r);
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

asio::awaitable<outcome<long long>> queue_api::source_index(std::string queue, long long held) {
  if (!valid_name(queue)) co_return bad_name("queue", queue);
  auto in = lua::source_for_queue(keys_, queue, held);
  auto r = co_await lua::run_script(*conn_, std::move(in));
  auto idx = lua::source_reply_of(r);
  // The index the caller holds, confirmed or put back, was replicated when it was first
  // handed out (and a loss is caught by the next check).
  if (!idx || wait_replicas_ == 0 || (held != 0 && idx.value() == held)) co_return idx;
  // A new allocation a failover could lose is not used: two queues would share its ids.
  std::vector<std::string> route{keys_.plain("sources")};
  std::vector<redis::command> wait;
  wait.push_back({"WAIT", std::to_string(wait_replicas_), std::to_string(wait_timeout_.count())});
  auto acks = co_await conn_->exec_all_at(route, std::move(wait));
  if (acks.empty() || !acks[0].ok() || acks[0].value.as_int().value_or(0) < wait_replicas_)
    co_return failure{errc::redis_unavailable,
                      "WAIT " + std::to_string(wait_replicas_) +
                          " confirmed fewer replicas for the source index of queue " + queue};
  co_return idx;
}

asio::awaitable<outcome<std::optional<admission::record>>> queue_api::admission_record(
    std::string queue, std::string id) {
  using result_type = std::optional<admission::record>;
  if (!valid_name(queue)) co_return bad_name("queue", queue);
  auto in = lua::admission_for(keys_, queue, std::move(id), false);
  auto r = co_await lua::run_script(*conn_, std::move(in));
  auto a = lua::admission_reply_of(r);
  if (!a) {
    if (a.error().code == errc::not_found) co_return result_type{};
    co_return a.error();
  }
  co_return admission::record{a.value().state, a.value().user, a.value().resource,
                              a.value().expires_at};
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

}  // namespace pushonce
