// End-to-end test of the whole system: a private redis-server, one
// `pushonce-leader run`, three `pushonce-worker`s and two `pushonce-gateway --dev-auth`
// as processes, real WebSocket clients, the admin CLI and the core publisher
// (docs/protocol.md). Every test case is one deployment in its own namespace on the shared
// redis-server, so the cases never see each other's keys or channels.
//
// Frames are filed by type as they arrive: `message` frames are what the guarantees are
// about; `position` frames are queue state and are only checked for their shape; every
// other frame is the reply to an op.

#include <doctest/doctest.h>
#include <hiredis/hiredis.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/json.hpp>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "core/keys.hpp"
#include "core/publisher.hpp"
#include "core/redis/connection.hpp"
#include "core/redis/endpoint.hpp"
#include "tests/support/deployment.hpp"
#include "tests/support/process.hpp"
#include "tests/support/sync_redis.hpp"
#include "tests/support/wait.hpp"
#include "tests/support/ws_client.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_system_e2e {

namespace asio = boost::asio;
namespace json = boost::json;
using namespace std::chrono_literals;
using pushonce::test::counter;
using pushonce::test::hello_frame;
using pushonce::test::http_request;
using pushonce::test::int_field;
using pushonce::test::pace;
using pushonce::test::process;
using pushonce::test::str_field;
using pushonce::test::sync_redis;
using pushonce::test::wait_until;
using pushonce::test::ws_client;
using kind = pushonce::test::deployment::kind;

namespace {

using clock_type = std::chrono::steady_clock;

bool is_decimal(const std::string& s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
}

// --- the core publisher, driven synchronously on a private io_context ----------------------

class core_publisher {
 public:
  core_publisher(const std::string& url, const std::string& ns) {
    pushonce::redis::connection_options o;
    o.where = pushonce::redis::endpoint::parse(url);
    conn_ = pushonce::redis::connection::create(io_.get_executor(), std::move(o));
    conn_->start();
    pub_ = std::make_unique<pushonce::publisher>(conn_, pushonce::keys(ns));
  }
  ~core_publisher() {
    pub_.reset();
    conn_->stop();
    if (timed_out_) return;
    io_.restart();
    io_.run_for(1s);
  }
  core_publisher(const core_publisher&) = delete;
  core_publisher& operator=(const core_publisher&) = delete;

  /// One publish; throws when it is refused.
  pushonce::published publish(const std::string& user, const std::string& data_json) {
    std::optional<pushonce::outcome<pushonce::published>> out;
    drive([&]() -> asio::awaitable<void> {
      auto op = pub_->publish(pushonce::publish_request{user, data_json, std::nullopt});
      auto r = co_await std::move(op);
      out.emplace(std::move(r));
    });
    auto& r = *out;
    if (!r)
      throw std::runtime_error("publish: " + std::string(pushonce::code_text(r.error().code)) +
                               " " + r.error().message);
    return r.value();
  }

  /// One pipelined batch; throws when any of it is refused.
  std::vector<pushonce::published> publish_batch(const std::string& user,
                                                 const std::vector<std::string>& datas) {
    std::vector<pushonce::publish_request> batch;
    for (auto& d : datas) batch.push_back(pushonce::publish_request{user, d, std::nullopt});
    std::vector<pushonce::outcome<pushonce::published>> rs;
    drive([&]() -> asio::awaitable<void> {
      auto op = pub_->publish_batch(std::move(batch));
      auto r = co_await std::move(op);
      rs = std::move(r);
    });
    std::vector<pushonce::published> out;
    for (auto& r : rs) {
      if (!r)
        throw std::runtime_error("publish: " + std::string(pushonce::code_text(r.error().code)) +
                                 " " + r.error().message);
      out.push_back(r.value());
    }
    return out;
  }

 private:
  // Runs the coroutine `f` on the private io_context until it completes.
  template <typename F>
  void drive(F f) {
    auto fut = asio::co_spawn(io_, std::move(f), asio::use_future);
    auto deadline = clock_type::now() + 20s;
    while (fut.wait_for(0s) != std::future_status::ready) {
      if (clock_type::now() > deadline) {
        timed_out_ = true;  // the coroutine refers to the caller's locals: never resume it
        throw std::runtime_error("core publisher: timed out");
      }
      if (io_.stopped()) io_.restart();
      io_.run_one_for(50ms);
    }
    fut.get();
  }

  asio::io_context io_;
  std::shared_ptr<pushonce::redis::connection> conn_;
  std::unique_ptr<pushonce::publisher> pub_;
  bool timed_out_ = false;
};

// --- one deployment: leader, 3 workers, 2 gateways in a fresh namespace ---------------------

struct deployment : pushonce::test::deployment {
  static constexpr int worker_count = 3;
  static constexpr int gateway_count = 2;

  explicit deployment(const std::string& what) : pushonce::test::deployment("sys", what) {
    start_leader({"--id", "l-" + ns()});
    for (int i = 1; i <= worker_count; ++i) start_worker({"--id", "w" + std::to_string(i)});
    for (int i = 0; i < gateway_count; ++i)
      start_gateway({"--dev-auth", "--id", "gw" + std::to_string(i), "--threads", "2"});
  }

  std::uint16_t gw_port(int i) { return port_of(gateway(i)); }
  process& gateway(int i) { return get(kind::gateway, static_cast<std::size_t>(i)); }
  long long inbox_len(const std::string& user) {
    return redis().integer({"XLEN", inbox_key(user)});
  }
};

/// Polls status until the counters reach these values (the workers flush them every
/// 100 ms); then every claim of the published messages has been decided.
json::object settled_status(deployment& d, long long published, long long delivered,
                            long long suppressed) {
  json::object st;
  bool ok = wait_until(
      [&] {
        st = d.status();
        return counter(st, "published") == published && counter(st, "delivered") == delivered &&
               counter(st, "duplicates_suppressed") == suppressed;
      },
      10s, 100ms);
  INFO("status: ", json::serialize(st));
  CHECK(ok);
  return st;
}

// --- a WebSocket session ---------------------------------------------------------------------

struct session {
  std::string user;
  int gw = -1;
  ws_client ws;
  json::object welcome;
  std::vector<json::object> messages;  // type "message", in arrival order
  std::vector<json::object> replies;   // every other frame but "position", not yet taken
  int positions = 0;                   // "position" frames pushed
  std::vector<std::string> malformed;  // frames that are not one JSON object with a type

  /// Files one frame; `false` when none arrived within `timeout`.
  bool pump(std::chrono::milliseconds timeout) {
    auto text = ws.receive(timeout);
    if (!text) return false;
    boost::system::error_code ec;
    auto v = json::parse(*text, ec);
    if (ec || !v.is_object() || str_field(v.as_object(), "type").empty()) {
      malformed.push_back(*text);
      return true;
    }
    auto& o = v.as_object();
    auto type = str_field(o, "type");
    if (type == "message") {
      messages.push_back(std::move(o));
    } else if (type == "position") {
      ++positions;
      CHECK_FALSE(o.contains("id"));
      CHECK_FALSE(o.contains("offset"));
      CHECK(int_field(o, "position") >= 1);
    } else {
      replies.push_back(std::move(o));
    }
    return true;
  }

  /// The next reply (not a message, not a position update) within `timeout`.
  std::optional<json::object> reply(std::chrono::milliseconds timeout = 5s) {
    auto deadline = clock_type::now() + timeout;
    while (replies.empty()) {
      auto now = clock_type::now();
      if (now >= deadline || ws.closed()) return std::nullopt;
      pump(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now));
    }
    auto r = std::move(replies.front());
    replies.erase(replies.begin());
    return r;
  }

  /// Waits until `n` messages have arrived in all.
  bool wait_messages(std::size_t n, std::chrono::milliseconds timeout = 10s) {
    auto deadline = clock_type::now() + timeout;
    while (messages.size() < n) {
      auto now = clock_type::now();
      if (now >= deadline || ws.closed()) return false;
      pump(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now));
    }
    return true;
  }

  std::vector<long long> offsets() const {
    std::vector<long long> out;
    for (auto& m : messages) out.push_back(int_field(m, "offset"));
    return out;
  }
};

/// Connects a session of `user` to gateway `gw` and says hello (with `since` when given:
/// a JSON object); fails the test case unless the first frame is a welcome.
std::unique_ptr<session> connect(deployment& d, int gw, const std::string& user,
                                 const std::string& since = {}) {
  auto s = std::make_unique<session>();
  s->user = user;
  s->gw = gw;
  s->ws.connect("127.0.0.1", d.gw_port(gw));
  std::string hello = hello_frame(user, since);
  REQUIRE(s->ws.send(hello));
  auto first = s->ws.receive(5s);
  INFO("hello of ", user, " on gw", gw, ": close ", s->ws.close_code().value_or(-1), " ",
       s->ws.close_reason());
  REQUIRE(first.has_value());
  auto v = json::parse(*first);
  REQUIRE(v.is_object());
  INFO("first frame: ", *first);
  REQUIRE(str_field(v.as_object(), "type") == "welcome");
  s->welcome = v.as_object();
  CHECK(str_field(s->welcome, "user") == user);
  CHECK_FALSE(str_field(s->welcome, "session").empty());
  CHECK_FALSE(str_field(s->welcome, "epoch").empty());
  REQUIRE(s->welcome.contains("recovered"));
  return s;
}

std::string since(const std::string& epoch, long long offset) {
  return R"({"epoch":")" + epoch + R"(","offset":)" + std::to_string(offset) + "}";
}

/// Reads every session until `done()` holds; false at the deadline.
bool pump_all(std::vector<session*>& sessions, const std::function<bool()>& done,
              std::chrono::milliseconds timeout) {
  auto deadline = clock_type::now() + timeout;
  while (!done()) {
    if (clock_type::now() >= deadline) return false;
    for (auto* s : sessions)
      while (s->pump(2ms)) {
      }
  }
  return true;
}

/// Reads every session until nothing has arrived on any of them for `quiet` (and for at
/// least two full rounds): what a duplicate or a stray message would have needed to show.
void drain_all(std::vector<session*>& sessions, std::chrono::milliseconds quiet = 500ms) {
  auto last = clock_type::now();
  int rounds = 0;
  while (rounds < 2 || clock_type::now() - last < quiet) {
    for (auto* s : sessions)
      while (s->pump(2ms)) last = clock_type::now();
    ++rounds;
  }
}

void drain_one(session& s, std::chrono::milliseconds quiet = 500ms) {
  std::vector<session*> one{&s};
  drain_all(one, quiet);
}

std::vector<long long> range(long long from, long long to) {
  std::vector<long long> out;
  for (long long i = from; i <= to; ++i) out.push_back(i);
  return out;
}

}  // namespace

TEST_CASE(
    "system: 50 users on 2 gateways join by WebSocket, 50 resources: one assignment per session") {
  deployment d("assign");
  REQUIRE_MESSAGE(d.wait_ready(), d.ready_failure());

  // user i on gateway i % 2; users 0..9 have a second session on the other gateway
  constexpr int users = 50;
  constexpr int doubled = 10;
  auto name = [](int i) { return "user" + std::to_string(i); };
  std::vector<std::unique_ptr<session>> firsts, seconds;
  for (int i = 0; i < users; ++i) {
    firsts.push_back(connect(d, i % 2, name(i)));
    CHECK(int_field(firsts.back()->welcome, "offset") == 0);
  }
  for (int i = 0; i < doubled; ++i) seconds.push_back(connect(d, (i + 1) % 2, name(i)));

  long long last_ticket = 0;
  for (int i = 0; i < users; ++i) {
    auto& s = *firsts[static_cast<size_t>(i)];
    REQUIRE(s.ws.send(R"({"op":"join","queue":"default"})"));
    auto r = s.reply();
    INFO("join of ", name(i));
    REQUIRE(r.has_value());
    INFO("reply: ", json::serialize(*r));
    CHECK(str_field(*r, "type") == "joined");
    CHECK(str_field(*r, "queue") == "default");
    CHECK(int_field(*r, "position") == i + 1);  // nothing assigned yet: the queue only grows
    CHECK(int_field(*r, "ticket") > last_ticket);
    last_ticket = int_field(*r, "ticket");
  }
  // the second session of a queued user cannot join again
  for (auto& s : seconds) {
    REQUIRE(s->ws.send(R"({"op":"join","queue":"default"})"));
    auto r = s->reply();
    REQUIRE(r.has_value());
    CHECK(str_field(*r, "type") == "error");
    CHECK(str_field(*r, "code") == "conflict");
    CHECK(str_field(*r, "op") == "join");
  }
  auto queue = d.admin({"queue", "--json"});
  INFO("queue: ", queue.describe());
  REQUIRE(queue.code() == 0);
  CHECK(int_field(queue.out.as_object(), "length") == users);

  std::vector<std::string> add{"resource", "add"};
  for (int i = 1; i <= users; ++i) add.push_back("r" + std::to_string(i));
  add.push_back("--json");
  auto added = d.admin(add);
  INFO("resource add: ", added.describe());
  REQUIRE(added.code() == 0);
  REQUIRE(added.out.at("added").as_array().size() == static_cast<size_t>(users));

  std::vector<session*> all;
  for (auto& s : firsts) all.push_back(s.get());
  for (auto& s : seconds) all.push_back(s.get());
  bool everyone = pump_all(
      all,
      [&] {
        for (auto* s : all)
          if (s->messages.empty()) return false;
        return true;
      },
      20s);
  {
    std::string missing;
    for (auto* s : all)
      if (s->messages.empty()) missing += " " + s->user + "@gw" + std::to_string(s->gw);
    INFO("sessions without an assignment:", missing);
    REQUIRE_MESSAGE(everyone, d.logs());
  }
  // every claim decided (1 won + 2 lost per message), then a quiet period: no duplicate
  auto st = settled_status(d, users, users, 2 * users);
  CHECK(counter(st, "redelivered") == 0);
  drain_all(all, 700ms);

  std::set<std::string> resources, ids;
  std::map<std::string, std::pair<std::string, std::string>> by_user;  // user -> {id, resource}
  for (auto* s : all) {
    INFO("session of ", s->user, " on gw", s->gw);
    CHECK(s->malformed.empty());
    CHECK(s->replies.empty());
    REQUIRE(s->messages.size() == 1);
    auto& m = s->messages[0];
    INFO("frame: ", json::serialize(m));
    CHECK(str_field(m, "kind") == "assignment");
    CHECK(int_field(m, "offset") == 1);
    auto id = str_field(m, "id");
    CHECK(is_decimal(id));
    CHECK(m.at("ts").is_number());
    REQUIRE(m.at("data").is_object());
    auto& data = m.at("data").as_object();
    CHECK(str_field(data, "queue") == "default");
    auto resource = str_field(data, "resource");
    CHECK(resource.rfind('r', 0) == 0);
    CHECK(data.contains("meta"));
    CHECK(data.contains("accept_by"));
    if (data.contains("accept_by")) CHECK(data.at("accept_by").is_null());  // no --accept-timeout
    auto [it, fresh] = by_user.emplace(s->user, std::make_pair(id, resource));
    if (!fresh) {
      // the other session of the same user got the same message
      CHECK(it->second.first == id);
      CHECK(it->second.second == resource);
    }
    ids.insert(id);
    resources.insert(resource);
  }
  CHECK(by_user.size() == static_cast<size_t>(users));
  CHECK(resources.size() == static_cast<size_t>(users));
  CHECK(ids.size() == static_cast<size_t>(users));
  for (auto& r : resources) {
    auto n = std::stoi(r.substr(1));
    CHECK((n >= 1 && n <= users));
  }
  CHECK(st.at("queue_length").as_int64() == 0);
  CHECK(st.at("resources").as_object().at("assigned").to_number<long long>() == users);
}

TEST_CASE("system: publish with an idempotency key twice: one frame per session") {
  deployment d("idem");
  REQUIRE_MESSAGE(d.wait_ready(), d.ready_failure());
  auto a0 = connect(d, 0, "alice");
  auto a1 = connect(d, 1, "alice");
  auto bob = connect(d, 1, "bob");
  std::vector<session*> all{a0.get(), a1.get(), bob.get()};

  const std::string body = R"({"text":"hello","n":1,"nested":{"ok":true}})";
  auto first = d.admin({"publish", "alice", body, "--id", "order-17", "--json"});
  INFO("first: ", first.describe());
  REQUIRE(first.code() == 0);
  CHECK(first.out.at("duplicate").as_bool() == false);
  auto id = str_field(first.out.as_object(), "id");
  CHECK(is_decimal(id));

  auto second = d.admin({"publish", "alice", R"({"text":"again"})", "--id", "order-17", "--json"});
  INFO("second: ", second.describe());
  REQUIRE(second.code() == 0);
  CHECK(second.out.at("duplicate").as_bool() == true);
  CHECK(str_field(second.out.as_object(), "id") == id);

  REQUIRE_MESSAGE(pump_all(
                      all, [&] { return !a0->messages.empty() && !a1->messages.empty(); }, 10s),
                  d.logs());
  settled_status(d, 1, 1, 2);
  drain_all(all);

  for (auto* s : {a0.get(), a1.get()}) {
    INFO("alice on gw", s->gw);
    REQUIRE(s->messages.size() == 1);
    auto& m = s->messages[0];
    INFO("frame: ", json::serialize(m));
    CHECK(str_field(m, "id") == id);
    CHECK(str_field(m, "kind") == "message");
    CHECK(int_field(m, "offset") == 1);
    CHECK(m.at("data") == json::parse(body));
    CHECK(m.at("ts").is_number());
  }
  CHECK(bob->messages.empty());
  CHECK(d.inbox_len("alice") == 1);
}

TEST_CASE("system: resume with since gets exactly the missed messages, then live ones") {
  deployment d("resume");
  REQUIRE_MESSAGE(d.wait_ready(), d.ready_failure());
  auto s = connect(d, 0, "carol");
  CHECK(int_field(s->welcome, "offset") == 0);
  const std::string epoch = str_field(s->welcome, "epoch");

  d.publish("carol", R"({"n":1})");
  d.publish("carol", R"({"n":2})");
  REQUIRE_MESSAGE(s->wait_messages(2), d.logs());
  CHECK(s->offsets() == range(1, 2));
  auto last = int_field(s->messages.back(), "offset");
  s->ws.close();

  // five while disconnected: delivered to the inbox
  std::set<long long> missed;
  for (int n = 3; n <= 7; ++n) {
    d.publish("carol", "{\"n\":" + std::to_string(n) + "}");
    missed.insert(n);
  }
  REQUIRE_MESSAGE(wait_until([&] { return d.inbox_len("carol") == 7; }, 10s), d.logs());

  // back through the other gateway, from the last offset seen
  auto back = connect(d, 1, "carol", since(epoch, last));
  CHECK(back->welcome.at("recovered") == true);
  CHECK(str_field(back->welcome, "epoch") == epoch);
  CHECK(int_field(back->welcome, "offset") == 7);
  REQUIRE(back->wait_messages(5));
  drain_one(*back, 300ms);
  CHECK(back->offsets() == range(3, 7));
  std::set<long long> got;
  for (auto& m : back->messages) {
    CHECK(str_field(m, "kind") == "message");
    got.insert(int_field(m.at("data").as_object(), "n"));
  }
  CHECK(got == missed);

  // then live
  d.publish("carol", R"({"n":8})");
  REQUIRE_MESSAGE(back->wait_messages(6), d.logs());
  drain_one(*back, 300ms);
  CHECK(back->offsets() == range(3, 8));
  CHECK(int_field(back->messages.back().at("data").as_object(), "n") == 8);
  std::set<std::string> ids;
  for (auto& m : back->messages) ids.insert(str_field(m, "id"));
  CHECK(ids.size() == back->messages.size());
}

TEST_CASE(
    "system: a user who joined by CLI and never connected gets the assignment on first connect") {
  deployment d("offline");
  REQUIRE_MESSAGE(d.wait_ready(), d.ready_failure());
  auto j = d.admin({"join", "dave", "--json"});
  INFO("join: ", j.describe());
  REQUIRE(j.code() == 0);
  CHECK(int_field(j.out.as_object(), "position") == 1);

  auto add = d.admin({"resource", "add", "desk-7", "--json"});
  INFO("resource add: ", add.describe());
  REQUIRE(add.code() == 0);
  REQUIRE_MESSAGE(wait_until([&] { return d.inbox_len("dave") == 1; }, 10s), d.logs());

  auto s = connect(d, 1, "dave");
  CHECK(s->welcome.at("recovered") == true);
  CHECK(int_field(s->welcome, "offset") == 1);
  REQUIRE_MESSAGE(s->wait_messages(1), d.logs());
  drain_one(*s);
  REQUIRE(s->messages.size() == 1);
  auto& m = s->messages[0];
  INFO("frame: ", json::serialize(m));
  CHECK(str_field(m, "kind") == "assignment");
  CHECK(int_field(m, "offset") == 1);
  CHECK(is_decimal(str_field(m, "id")));
  CHECK(str_field(m.at("data").as_object(), "resource") == "desk-7");
  CHECK(str_field(m.at("data").as_object(), "queue") == "default");
}

TEST_CASE("system: messages published while a user resumes a backlog arrive once each, in order") {
  deployment d("backlog");
  REQUIRE_MESSAGE(d.wait_ready(), d.ready_failure());
  auto first = connect(d, 0, "erin");
  const std::string epoch = str_field(first->welcome, "epoch");
  first->ws.close();

  constexpr int backlog = 200;
  constexpr int live = 100;
  core_publisher pub(d.url(), d.ns());
  std::vector<std::string> datas;
  for (int n = 1; n <= backlog; ++n) datas.push_back("{\"n\":" + std::to_string(n) + "}");
  auto ids = pub.publish_batch("erin", datas);
  REQUIRE(ids.size() == static_cast<size_t>(backlog));
  REQUIRE_MESSAGE(wait_until([&] { return d.inbox_len("erin") == backlog; }, 15s, 50ms), d.logs());

  // 100 more, paced, from another thread while the session resumes from offset 0
  std::atomic<int> sent{0};
  std::string publisher_error;
  std::thread publisher([&] {
    try {
      core_publisher p(d.url(), d.ns());
      for (int n = backlog + 1; n <= backlog + live; ++n) {
        p.publish("erin", "{\"n\":" + std::to_string(n) + "}");
        ++sent;
        pace(2ms, "a live message every 2 ms");
      }
    } catch (const std::exception& e) {
      publisher_error = e.what();
      sent = live;  // unblock the waiter
    }
  });
  struct joiner {
    std::thread& t;
    ~joiner() {
      if (t.joinable()) t.join();
    }
  } join_publisher{publisher};
  REQUIRE(wait_until([&] { return sent >= 10; }, 20s, 1ms));
  auto s = connect(d, 1, "erin", since(epoch, 0));
  bool all = s->wait_messages(backlog + live, 20s);
  publisher.join();
  REQUIRE(publisher_error.empty());
  INFO("messages received: ", s->messages.size(), ", sent live: ", sent.load());
  REQUIRE_MESSAGE(all, d.logs());
  drain_one(*s);
  CHECK(s->welcome.at("recovered") == true);
  CHECK(s->offsets() == range(1, backlog + live));
  std::set<std::string> distinct;
  std::set<long long> values;
  for (auto& m : s->messages) {
    distinct.insert(str_field(m, "id"));
    values.insert(int_field(m.at("data").as_object(), "n"));
  }
  CHECK(distinct.size() == static_cast<size_t>(backlog + live));
  CHECK(values.size() == static_cast<size_t>(backlog + live));
  CHECK(d.inbox_len("erin") == backlog + live);
}

TEST_CASE("system: bad input is answered as the contract says and other sessions keep working") {
  deployment d("badinput");
  REQUIRE_MESSAGE(d.wait_ready(), d.ready_failure());
  // a witness on each gateway: must keep receiving whatever happens to other sessions
  std::vector<std::unique_ptr<session>> witnesses;
  witnesses.push_back(connect(d, 0, "wit0"));
  witnesses.push_back(connect(d, 1, "wit1"));
  int round = 0;
  auto still_serving = [&](const std::string& after) {
    ++round;
    for (auto& w : witnesses) {
      INFO("after ", after, ": witness ", w->user);
      d.publish(w->user, "{\"round\":" + std::to_string(round) + "}");
      REQUIRE_MESSAGE(w->wait_messages(static_cast<size_t>(round)), d.logs());
      auto& m = w->messages.back();
      CHECK(int_field(m, "offset") == round);
      CHECK(int_field(m.at("data").as_object(), "round") == round);
    }
  };

  for (int gw = 0; gw < 2; ++gw) {
    INFO("on gw", gw);
    // bad JSON: an error frame, the connection stays open
    auto bad = connect(d, gw, "frank" + std::to_string(gw));
    REQUIRE(bad->ws.send("{not json"));
    auto e = bad->reply();
    REQUIRE(e.has_value());
    CHECK(str_field(*e, "type") == "error");
    CHECK(str_field(*e, "code") == "bad_request");
    REQUIRE(bad->ws.send(R"({"op":"ping"})"));
    auto pong = bad->reply();
    REQUIRE(pong.has_value());
    CHECK(str_field(*pong, "type") == "pong");
    still_serving("bad JSON");

    // unknown op: an error frame, the connection stays open
    REQUIRE(bad->ws.send(R"({"op":"dance","steps":3})"));
    e = bad->reply();
    REQUIRE(e.has_value());
    CHECK(str_field(*e, "type") == "error");
    CHECK(str_field(*e, "code") == "unknown_op");
    CHECK(str_field(*e, "op") == "dance");
    REQUIRE(bad->ws.send(R"({"op":"ping"})"));
    pong = bad->reply();
    REQUIRE(pong.has_value());
    CHECK(str_field(*pong, "type") == "pong");
    still_serving("unknown op");

    // first frame not hello: closed with 1008
    ws_client rude;
    rude.connect("127.0.0.1", d.gw_port(gw));
    REQUIRE(rude.send(R"({"op":"join","queue":"default"})"));
    CHECK(rude.wait_closed(5s));
    CHECK(rude.close_code() == 1008);
    still_serving("first frame not hello");

    // a frame over 64 KiB: closed with 1009
    auto big = connect(d, gw, "gina" + std::to_string(gw));
    big->ws.send(R"({"op":"ping","pad":")" + std::string(65 * 1024, 'x') + "\"}");
    CHECK(big->ws.wait_closed(5s));
    CHECK(big->ws.close_code() == 1009);
    still_serving("frame over 64 KiB");

    // the session that sent bad JSON and an unknown op is still served too
    d.publish(bad->user, R"({"after":"errors"})");
    REQUIRE(bad->wait_messages(1));
    CHECK(int_field(bad->messages[0], "offset") == 1);
  }
  drain_one(*witnesses[0], 300ms);
  drain_one(*witnesses[1], 300ms);
  for (auto& w : witnesses) CHECK(w->offsets() == range(1, round));
  for (int i = 0; i < 2; ++i) CHECK(d.gateway(i).running());
}

TEST_CASE("system: status lists the leader, the 3 workers and the 2 gateways with their sessions") {
  deployment d("status");
  REQUIRE_MESSAGE(d.wait_ready(), d.ready_failure());
  std::vector<std::unique_ptr<session>> sessions;
  for (int i = 0; i < 3; ++i) sessions.push_back(connect(d, 0, "s" + std::to_string(i)));
  for (int i = 3; i < 5; ++i) sessions.push_back(connect(d, 1, "s" + std::to_string(i)));

  auto sessions_of = [](const json::object& st) {
    std::map<std::string, long long> out;  // gateway id -> sessions
    for (auto& g : st.at("gateways").as_array())
      out[str_field(g.as_object(), "id")] = int_field(g.as_object(), "sessions");
    return out;
  };
  json::object st;
  bool listed = wait_until(
      [&] {
        st = d.status();
        return st.at("workers").as_array().size() == 3 &&
               sessions_of(st) == std::map<std::string, long long>{{"gw0", 3}, {"gw1", 2}};
      },
      10s, 100ms);
  INFO("status: ", json::serialize(st));
  REQUIRE_MESSAGE(listed, d.logs());

  REQUIRE(st.at("leader").is_object());
  CHECK(int_field(st.at("leader").as_object(), "pid") == d.get(kind::leader).pid());
  std::set<long long> worker_pids, want_workers;
  std::set<std::string> worker_ids;
  for (auto& w : st.at("workers").as_array()) {
    worker_pids.insert(int_field(w.as_object(), "pid"));
    worker_ids.insert(str_field(w.as_object(), "id"));
    CHECK(w.as_object().contains("last_seen"));
  }
  for (auto* w : d.all(kind::worker)) want_workers.insert(w->pid());
  CHECK(worker_pids == want_workers);
  CHECK(worker_ids == std::set<std::string>{"w1", "w2", "w3"});
  for (auto& g : st.at("gateways").as_array()) {
    auto& o = g.as_object();
    int i = str_field(o, "id") == "gw0" ? 0 : 1;
    CHECK(int_field(o, "pid") == d.gateway(i).pid());
    CHECK(o.contains("host"));
    CHECK(o.contains("last_seen"));
  }

  // a session closes: its gateway's count follows
  sessions.back()->ws.close();
  bool followed = wait_until(
      [&] {
        st = d.status();
        return sessions_of(st) == std::map<std::string, long long>{{"gw0", 3}, {"gw1", 1}};
      },
      10s, 100ms);
  INFO("status: ", json::serialize(st));
  CHECK(followed);
}

}  // namespace test_system_e2e
