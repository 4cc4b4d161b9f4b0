#include "core/redis/request_queue.hpp"

#include "core/redis/error.hpp"
#include "core/redis/resp_stream.hpp"

namespace pushonce::redis {

request_queue::request_queue(std::size_t max_queued, std::chrono::milliseconds timeout,
                             deliver_fn deliver)
    : max_queued_(max_queued), timeout_(timeout), deliver_(std::move(deliver)) {
  if (!deliver_)
    deliver_ = [](handler_type&& h, std::error_code ec, reply&& r) {
      std::move(h)(ec, std::move(r));
    };
}

bool request_queue::push(command cmd, handler_type handler, clock_type::time_point now) {
  std::error_code ec = closed_;
  if (!ec && active_ >= max_queued_) ec = error::queue_full;
  if (ec) {
    deliver_(std::move(handler), ec, noted());
    return false;
  }
  ++active_;
  waiting_.emplace_back(std::move(cmd), std::move(handler), now + timeout_);
  return true;
}

std::size_t request_queue::write_into(std::string& out, std::size_t max_bytes) {
  std::size_t n = 0;
  while (!waiting_.empty() && out.size() < max_bytes) {
    auto& e = waiting_.front();
    resp_stream::encode(e.cmd, out);
    e.cmd = command{};  // encoded: the words are not needed any more
    inflight_.push_back(std::move(e));
    waiting_.pop_front();
    ++n;
  }
  return n;
}

bool request_queue::on_reply(reply r) {
  if (inflight_.empty()) return false;
  {
    entry e = std::move(inflight_.front());
    inflight_.pop_front();
    finish(e, {}, std::move(r));
  }
  flush();
  return true;
}

// Deadlines grow in push order (one timeout for every command), and in-flight commands
// were all pushed before the waiting ones: both scans stop at the first live command.
bool request_queue::expire(clock_type::time_point now) {
  bool stuck = false;
  for (auto& e : inflight_) {
    if (e.deadline > now) break;
    if (e.done) continue;
    finish(e, error::timeout, {});
    stuck = true;
  }
  while (!waiting_.empty() && waiting_.front().deadline <= now) {
    entry e = std::move(waiting_.front());
    waiting_.pop_front();
    finish(e, error::timeout, noted());
  }
  flush();
  return stuck;
}

void request_queue::on_disconnect() {
  while (!inflight_.empty()) {
    entry e = std::move(inflight_.front());
    inflight_.pop_front();
    finish(e, error::disconnected, {});
  }
  flush();
}

void request_queue::close(std::error_code ec) {
  closed_ = ec;
  while (!inflight_.empty()) {
    entry e = std::move(inflight_.front());
    inflight_.pop_front();
    finish(e, ec, {});
  }
  while (!waiting_.empty()) {
    entry e = std::move(waiting_.front());
    waiting_.pop_front();
    finish(e, ec, noted());
  }
  flush();
}

reply request_queue::noted() const {
  reply r;
  r.str = note_;
  return r;
}

void request_queue::finish(entry& e, std::error_code ec, reply r) {
  if (e.done) return;
  e.done = true;
  --active_;
  ready_.push_back(ready{std::move(e.handler), ec, std::move(r)});
}

void request_queue::flush() {
  if (ready_.empty()) return;
  auto batch = std::move(ready_);
  ready_.clear();
  for (auto& r : batch) deliver_(std::move(r.handler), r.ec, std::move(r.value));
}

}  // namespace pushonce::redis
