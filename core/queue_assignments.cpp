// queue_api's assignments: assign.lua (with or without a plan read by assign_plan.lua),
// accept.lua and expire.lua, and with --wait-replicas the bus message published once WAIT
// confirmed the call's writes.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/log.hpp"
#include "core/lua/accept.hpp"
#include "core/names.hpp"
#include "core/queue_api.hpp"
#include "core/redis/failure_of.hpp"

namespace pushonce {

namespace asio = boost::asio;

lua::assign_settings queue_api::assign_settings_for(long long source, long long fencing_token,
                                                    long long accept_timeout_ms,
                                                    long long max) const {
  return {.source = source,
          .fencing_token = fencing_token,
          .accept_timeout_ms = accept_timeout_ms,
          .outbox_retention = retention_.outbox,
          .max = max,
          .admission_record = admission_record_,
          .publish = wait_replicas_ == 0};
}

std::vector<assignment> queue_api::made(const std::string& queue, std::vector<assignment> batch) {
  for (const auto& a : batch) ids_made_.saw(queue, a.id);
  return batch;
}

asio::awaitable<void> queue_api::publish_replicated(const std::string& queue,
                                                    const redis::reply& reply, std::size_t width) {
  auto payload = lua::bus_message_of(reply, width);
  if (payload.empty()) co_return;
  // WAIT on the node of the queue's slot (it covers every write sent on that connection
  // before it), then PUBLISH on the same node.
  // Named vectors, not braced lists in the co_await operand (GCC 12).
  std::vector<std::string> route{keys_.queue(queue, "outbox")};
  std::vector<redis::command> wait;
  wait.push_back({"WAIT", std::to_string(wait_replicas_), std::to_string(wait_timeout_.count())});
  auto acks = co_await conn_->exec_all_at(route, std::move(wait));
  if (acks.empty() || !acks[0].ok() || acks[0].value.as_int().value_or(0) < wait_replicas_) {
    ++wait_short_;
    log::warn(
        "queue {}: WAIT {} confirmed fewer replicas: its bus message is held back (the "
        "sweeper re-drives the outbox entry after a lease)",
        queue, wait_replicas_);
    co_return;
  }
  std::vector<redis::command> publish;
  publish.push_back({"PUBLISH", keys_.bus_channel(), std::move(payload)});
  co_await conn_->exec_all_at(std::move(route), std::move(publish));
}

asio::awaitable<outcome<std::vector<assignment>>> queue_api::assign_batch(
    std::string queue, long long source, long long fencing_token, long long accept_timeout_ms,
    long long max) {
  if (!valid_name(queue)) co_return bad_name("queue", queue);
  auto s = assign_settings_for(source, fencing_token, accept_timeout_ms, max);
  s.least_seq = ids_made_.at(queue);
  auto in = lua::assign_for(keys_, queue, s);
  auto r = co_await lua::run_script(*conn_, std::move(in));
  if (!r.ok()) co_return failure_of(r);
  if (wait_replicas_ > 0) co_await publish_replicated(queue, r.value, 3);
  co_return made(queue, lua::assignments_of(r.value, 3));
}

asio::awaitable<outcome<admission::assign_plan>> queue_api::plan_assign(std::string queue,
                                                                        long long max) {
  if (!valid_name(queue)) co_return bad_name("queue", queue);
  auto in = lua::assign_plan_for(keys_, queue, max, ids_made_.at(queue));
  auto r = co_await lua::run_script(*conn_, std::move(in));
  if (!r.ok()) co_return failure_of(r);
  auto plan = lua::assign_plan_of(r.value);
  if (!plan) co_return failure{errc::internal, "assign_plan.lua: unexpected reply"};
  co_return std::move(*plan);
}

asio::awaitable<outcome<std::optional<std::vector<assignment>>>> queue_api::assign_planned(
    std::string queue, long long source, long long fencing_token, long long accept_timeout_ms,
    long long max, admission::assign_plan plan, std::vector<std::string> tokens) {
  using result_type = std::optional<std::vector<assignment>>;
  if (!valid_name(queue)) co_return bad_name("queue", queue);
  auto in = lua::planned_assign_for(
      keys_, queue, assign_settings_for(source, fencing_token, accept_timeout_ms, max), plan,
      tokens);
  auto r = co_await lua::run_script(*conn_, std::move(in));
  if (!r.ok()) co_return failure_of(r);
  if (lua::assign_was_stale(r.value)) co_return result_type{};
  if (wait_replicas_ > 0) co_await publish_replicated(queue, r.value, 3);
  co_return result_type{made(queue, lua::assignments_of(r.value, 3))};
}

asio::awaitable<outcome<std::optional<assignment>>> queue_api::assign_one(
    std::string queue, long long source, long long fencing_token, long long accept_timeout_ms) {
  auto r = co_await assign_batch(std::move(queue), source, fencing_token, accept_timeout_ms, 1);
  if (!r) co_return r.error();
  if (r.value().empty()) co_return std::optional<assignment>{};
  co_return std::optional<assignment>{std::move(r.value().front())};
}

asio::awaitable<outcome<lua::accept_reply>> queue_api::accept(std::string queue, std::string user,
                                                              std::string id) {
  if (!valid_name(queue)) co_return bad_name("queue", queue);
  if (!valid_name(user)) co_return bad_name("user", user);
  auto in = lua::accept_for(keys_, queue, user, std::move(id));
  auto r = co_await lua::run_script(*conn_, std::move(in));
  co_return lua::accept_reply_of(r);
}

asio::awaitable<outcome<std::vector<assignment>>> queue_api::expire_batch(std::string queue,
                                                                          long long source,
                                                                          long long fencing_token,
                                                                          long long max) {
  auto s = assign_settings_for(source, fencing_token, 0, max);
  s.least_seq = ids_made_.at(queue);
  auto in = lua::expire_for(keys_, queue, s);
  auto r = co_await lua::run_script(*conn_, std::move(in));
  if (!r.ok()) co_return failure_of(r);
  if (wait_replicas_ > 0) co_await publish_replicated(queue, r.value, 4);
  co_return made(queue, lua::assignments_of(r.value, 4));
}

}  // namespace pushonce
