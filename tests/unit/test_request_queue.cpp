#include "core/redis/request_queue.hpp"
// (the header under test comes first)

#include <doctest/doctest.h>

#include <optional>
#include <vector>

#include "core/redis/error.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_request_queue_unit {

using pushonce::redis::command;
using pushonce::redis::error;
using pushonce::redis::reply;
using pushonce::redis::request_queue;
using ms = std::chrono::milliseconds;
using clock_type = request_queue::clock_type;

namespace {

struct outcome {
  std::optional<std::error_code> ec;
  reply value;
  bool done() const { return ec.has_value(); }
};

// A handler that records what it was completed with.
request_queue::handler_type into(outcome& o) {
  return [&o](std::error_code ec, reply r) {
    o.ec = ec;
    o.value = std::move(r);
  };
}

reply integer(long long v) {
  reply r;
  r.kind = reply::type::integer;
  r.integer = v;
  return r;
}

command get(std::string key) {
  return command{"GET", std::move(key)};
}

}  // namespace

TEST_CASE("request_queue: replies complete commands in the order they were written") {
  request_queue q(100, ms{1000}, {});
  auto t0 = clock_type::now();
  outcome a, b, c;
  q.push(get("a"), into(a), t0);
  q.push(get("b"), into(b), t0);
  std::string out;
  CHECK(q.write_into(out, 1 << 20) == 2);
  CHECK(out == "*2\r\n$3\r\nGET\r\n$1\r\na\r\n*2\r\n$3\r\nGET\r\n$1\r\nb\r\n");
  q.push(get("c"), into(c), t0);
  CHECK(q.inflight() == 2);
  CHECK(q.waiting() == 1);
  CHECK(q.on_reply(integer(1)));
  CHECK(a.done());
  CHECK(!*a.ec);
  CHECK(a.value.integer == 1);
  CHECK(!b.done());
  CHECK(q.on_reply(integer(2)));
  CHECK(b.value.integer == 2);
  CHECK(!q.on_reply(integer(3)));  // c is not written yet: a reply nobody asked for
  CHECK(!c.done());
  CHECK(q.active() == 1);
}

TEST_CASE("request_queue: a pipelined batch is written as one buffer and answered in order") {
  request_queue q(100, ms{1000}, {});
  auto t0 = clock_type::now();
  std::vector<outcome> rs(50);
  for (int i = 0; i < 50; ++i) q.push(command{"INCR", "n"}, into(rs[i]), t0);
  std::string out;
  CHECK(q.write_into(out, 1 << 20) == 50);
  CHECK(out.size() == 50 * std::string("*2\r\n$4\r\nINCR\r\n$1\r\nn\r\n").size());
  CHECK(!q.has_waiting());
  for (int i = 0; i < 50; ++i) CHECK(q.on_reply(integer(i + 1)));
  int in_order = 0;
  for (int i = 0; i < 50; ++i) in_order += rs[i].done() && rs[i].value.integer == i + 1;
  CHECK(in_order == 50);
  CHECK(q.active() == 0);
}

TEST_CASE("request_queue: write_into stops once the buffer holds max_bytes") {
  request_queue q(100, ms{1000}, {});
  std::vector<outcome> rs(10);
  for (auto& r : rs) q.push(get("key"), into(r), clock_type::now());
  std::string out;
  CHECK(q.write_into(out, 1) == 1);
  CHECK(q.waiting() == 9);
  CHECK(q.write_into(out, 1 << 20) == 9);
}

TEST_CASE("request_queue: beyond max_queued a command fails at once with queue_full") {
  request_queue q(2, ms{1000}, {});
  outcome a, b, c;
  CHECK(q.push(get("a"), into(a), clock_type::now()));
  CHECK(q.push(get("b"), into(b), clock_type::now()));
  CHECK(!q.push(get("c"), into(c), clock_type::now()));
  CHECK(c.done());
  CHECK(*c.ec == error::queue_full);
  std::string out;
  q.write_into(out, 1 << 20);
  q.on_reply(integer(1));  // a slot is free again
  outcome d;
  CHECK(q.push(get("d"), into(d), clock_type::now()));
  CHECK(!d.done());
}

TEST_CASE("request_queue: a waiting command past its deadline fails and is never written") {
  request_queue q(100, ms{100}, {});
  auto t0 = clock_type::now();
  outcome a, b;
  q.push(get("a"), into(a), t0);
  q.push(get("b"), into(b), t0 + ms{50});
  CHECK(!q.expire(t0 + ms{99}));
  CHECK(!a.done());
  CHECK(!q.expire(t0 + ms{100}));  // not stuck: nothing was in flight
  CHECK(*a.ec == error::timeout);
  CHECK(!b.done());
  std::string out;
  CHECK(q.write_into(out, 1 << 20) == 1);
  CHECK(out.find("$1\r\na\r\n") == std::string::npos);
  CHECK(out.find("$1\r\nb\r\n") != std::string::npos);
}

TEST_CASE("request_queue: an in-flight timeout reports a stuck server and keeps its slot") {
  request_queue q(100, ms{100}, {});
  auto t0 = clock_type::now();
  outcome a, b;
  q.push(get("a"), into(a), t0);
  std::string out;
  q.write_into(out, 1 << 20);
  CHECK(q.expire(t0 + ms{100}));
  CHECK(*a.ec == error::timeout);
  CHECK(q.active() == 0);
  CHECK(q.inflight() == 1);  // the late reply still has to be matched
  q.push(get("b"), into(b), t0 + ms{100});
  q.write_into(out, 1 << 20);
  CHECK(q.on_reply(integer(1)));  // a's late reply: dropped
  CHECK(!b.done());
  CHECK(q.on_reply(integer(2)));
  CHECK(b.value.integer == 2);
  CHECK(a.value.integer == 0);
}

TEST_CASE("request_queue: a disconnect fails written commands and keeps waiting ones") {
  request_queue q(100, ms{1000}, {});
  auto t0 = clock_type::now();
  outcome a, b;
  q.push(get("a"), into(a), t0);
  std::string out;
  q.write_into(out, 1 << 20);
  q.push(get("b"), into(b), t0);
  q.on_disconnect();
  CHECK(*a.ec == error::disconnected);
  CHECK(!b.done());
  CHECK(q.inflight() == 0);
  out.clear();
  CHECK(q.write_into(out, 1 << 20) == 1);  // b goes out on the next connection, a does not
  CHECK(out == "*2\r\n$3\r\nGET\r\n$1\r\nb\r\n");
}

TEST_CASE("request_queue: stop while reconnecting fails everything and every later push") {
  request_queue q(100, ms{1000}, {});
  auto t0 = clock_type::now();
  outcome a, b, c;
  q.push(get("a"), into(a), t0);
  std::string out;
  q.write_into(out, 1 << 20);
  q.on_disconnect();
  q.push(get("b"), into(b), t0);  // waiting for the next connection
  q.close(error::stopped);
  CHECK(*a.ec == error::disconnected);
  CHECK(*b.ec == error::stopped);
  CHECK(!q.push(get("c"), into(c), t0));
  CHECK(*c.ec == error::stopped);
  CHECK(q.active() == 0);
  CHECK(q.closed());
}

TEST_CASE("request_queue: a completion that pushes again sees a consistent queue") {
  request_queue q(100, ms{1000}, {});
  auto t0 = clock_type::now();
  outcome second;
  bool first_done = false;
  request_queue::handler_type first = [&](std::error_code, reply) {
    first_done = true;
    q.push(get("again"), into(second), t0);
  };
  q.push(get("a"), std::move(first), t0);
  std::string out;
  q.write_into(out, 1 << 20);
  CHECK(q.on_reply(integer(1)));
  CHECK(first_done);
  CHECK(q.waiting() == 1);
  CHECK(q.inflight() == 0);
}

TEST_CASE("request_queue: completions go through the deliver function") {
  int delivered = 0;
  request_queue q(100, ms{1000},
                  [&](request_queue::handler_type&& h, std::error_code ec, reply&& r) {
                    ++delivered;
                    std::move(h)(ec, std::move(r));
                  });
  outcome a;
  q.push(get("a"), into(a), clock_type::now());
  q.close(error::stopped);
  CHECK(delivered == 1);
  CHECK(a.done());
}

}  // namespace test_request_queue_unit
