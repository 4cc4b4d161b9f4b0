#include "core/queue_pace.hpp"

#include <chrono>
#include <utility>

#include "core/redis/failure_of.hpp"
#include "core/wait_estimate.hpp"

namespace pushonce {

namespace asio = boost::asio;

std::optional<long long> queue_pace::eta_s(long long position, long long now_ms) const {
  return estimate_wait_s(position, record, now_ms, paused, prequeue);
}

double queue_pace::per_minute(long long now_ms) const {
  if (paused || prequeue) return 0;
  return recent_assignments_per_minute(record, now_ms);
}

std::vector<redis::command> queue_pace_reads(const keys& k, const std::string& queue) {
  return {{"HGETALL", k.queue(queue, "rate")},
          {"HMGET", k.queue(queue, "settings"), "paused", "state"}};
}

queue_pace parse_queue_pace(const redis::reply& rate, const redis::reply& settings) {
  queue_pace p;
  std::vector<std::pair<std::string, std::string>> fields;
  for (std::size_t i = 0; i + 1 < rate.elements.size(); i += 2)
    fields.emplace_back(rate.elements[i].str, rate.elements[i + 1].str);
  p.record = parse_assignment_record(fields);
  if (settings.elements.size() == 2) {
    const auto& paused = settings.elements[0];
    const auto& state = settings.elements[1];
    p.paused = paused.is_string() && paused.str == "1";
    p.prequeue = state.is_string() && state.str == "prequeue";
  }
  return p;
}

asio::awaitable<outcome<queue_pace>> read_queue_pace(std::shared_ptr<redis::connection> conn,
                                                     keys k, std::string queue) {
  auto cmds = queue_pace_reads(k, queue);
  auto rs = co_await conn->exec_all(std::move(cmds));
  for (auto& r : rs)
    if (!r.ok()) co_return failure_of(r);
  if (rs.size() != 2) co_return failure{errc::internal, "queue pace: wrong number of replies"};
  co_return parse_queue_pace(rs[0].value, rs[1].value);
}

long long pace_now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace pushonce
