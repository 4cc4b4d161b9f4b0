// End-to-end: the real pushonce-leader and pushonce-worker programs as processes against a
// private redis-server (docs/protocol.md). Every test case uses its own namespace, so the cases
// share one Redis without seeing each other's keys or channels.

#include <doctest/doctest.h>
#include <hiredis/hiredis.h>
#include <unistd.h>

#include <atomic>
#include <boost/json.hpp>
#include <chrono>
#include <csignal>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "tests/support/deployment.hpp"
#include "tests/support/process.hpp"
#include "tests/support/sync_redis.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_pipeline_e2e {

namespace json = boost::json;
using namespace std::chrono_literals;
using pushonce::test::cli_result;
using pushonce::test::counter;
using pushonce::test::parse_or_null;
using pushonce::test::run_cli;
using pushonce::test::wait_until;
using kind = pushonce::test::deployment::kind;
using clock_type = std::chrono::steady_clock;

namespace {

/// A deployment in its own "e2e-WHAT-..." namespace on the shared redis-server.
struct deployment : pushonce::test::deployment {
  explicit deployment(const std::string& what) : pushonce::test::deployment("e2e", what) {}
};

}  // namespace

TEST_CASE("pipeline: 100 users, 100 resources, 3 workers: one assignment each, no duplicates") {
  deployment d("pipeline");
  d.start_leader();
  for (int i = 0; i < 3; ++i) d.start_worker();
  REQUIRE_MESSAGE(d.wait_ready(), d.logs());

  // 100 joins, four CLI processes at a time.
  constexpr int users = 100;
  std::vector<cli_result> joins(users);
  {
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([&, t] {
        for (int i = t; i < users; i += 4)
          joins[i] = d.admin({"join", "u" + std::to_string(i + 1), "--json"});
      });
    for (auto& t : threads) t.join();
  }
  for (int i = 0; i < users; ++i) {
    INFO("join u", i + 1, ": ", joins[i].describe());
    REQUIRE(joins[i].code() == 0);
    REQUIRE(joins[i].out.is_object());
    CHECK(joins[i].out.at("user").as_string() == ("u" + std::to_string(i + 1)).c_str());
    CHECK(joins[i].out.at("queue").as_string() == "default");
    CHECK(joins[i].out.at("position").as_int64() >= 1);
  }

  std::vector<std::string> add{"resource", "add"};
  for (int i = 1; i <= 100; ++i) add.push_back("r" + std::to_string(i));
  add.push_back("--json");
  auto added = d.admin(add);
  INFO(added.describe());
  REQUIRE(added.code() == 0);
  REQUIRE(added.out.at("added").as_array().size() == 100);

  // Every inbox gets exactly one entry.
  auto inbox_len = [&](int i) {
    return d.redis().integer({"XLEN", d.inbox_key("u" + std::to_string(i))});
  };
  bool all_delivered = wait_until(
      [&] {
        for (int i = 1; i <= users; ++i)
          if (inbox_len(i) < 1) return false;
        return true;
      },
      15s, 50ms);
  REQUIRE_MESSAGE(all_delivered, d.logs());

  std::set<std::string> resources, ids;
  for (int i = 1; i <= users; ++i) {
    auto user = "u" + std::to_string(i);
    auto entries = d.redis().inbox(d.inbox_key(user));
    INFO("inbox of ", user);
    REQUIRE(entries.size() == 1);
    CHECK(entries[0].first == "1-0");
    auto frame = parse_or_null(entries[0].second);
    INFO("frame: ", entries[0].second);
    REQUIRE(frame.is_object());
    const auto& f = frame.as_object();
    CHECK(f.at("type").as_string() == "message");
    CHECK(f.at("kind").as_string() == "assignment");
    CHECK(f.at("offset").as_int64() == 1);
    REQUIRE(f.at("id").is_string());
    ids.insert(std::string(f.at("id").as_string()));
    CHECK(f.at("ts").is_int64());
    const auto& data = f.at("data").as_object();
    CHECK(data.at("queue").as_string() == "default");
    REQUIRE(data.at("resource").is_string());
    std::string r(data.at("resource").as_string());
    CHECK(r.size() >= 2);
    CHECK(r[0] == 'r');
    auto n = std::stoi(r.substr(1));
    CHECK((n >= 1 && n <= 100));
    resources.insert(r);
  }
  CHECK(resources.size() == 100);
  CHECK(ids.size() == 100);

  // Counters are flushed by the workers every 100 ms: poll until they settle.
  json::object st;
  bool settled = wait_until(
      [&] {
        st = d.status();
        return counter(st, "published") == 100 && counter(st, "delivered") == 100 &&
               counter(st, "duplicates_suppressed") == 200;
      },
      10s, 100ms);
  INFO("status: ", json::serialize(st));
  CHECK(settled);
  CHECK(counter(st, "published") == 100);
  CHECK(counter(st, "delivered") == 100);
  CHECK(counter(st, "duplicates_suppressed") == 200);
  CHECK(counter(st, "redelivered") == 0);
  CHECK(counter(st, "dead_lettered") == 0);
  CHECK(st.at("counters").as_object().contains("dead_letters_trimmed"));
  CHECK(counter(st, "dead_letters_trimmed") == 0);
  CHECK(st.at("workers").as_array().size() == 3);
  REQUIRE(st.at("leader").is_object());
  CHECK(st.at("leader").as_object().contains("fencing_token"));
  CHECK(st.at("queue_length").as_int64() == 0);
  CHECK(st.at("resources").as_object().at("free").as_int64() == 0);
  CHECK(st.at("resources").as_object().at("assigned").as_int64() == 100);

  // Nothing more arrives after the counters settled.
  for (int i = 1; i <= users; ++i) CHECK(inbox_len(i) == 1);
}

TEST_CASE("publish with an idempotency key: one message, one inbox entry") {
  deployment d("publish");
  for (int i = 0; i < 3; ++i) d.start_worker();
  REQUIRE_MESSAGE(d.wait_ready(), d.logs());

  auto first = d.admin({"publish", "alice", R"({"hello":"world","n":1})", "--id", "K1", "--json"});
  INFO("first: ", first.describe());
  REQUIRE(first.code() == 0);
  REQUIRE(first.out.is_object());
  CHECK(first.out.at("duplicate").as_bool() == false);
  std::string id(first.out.at("id").as_string());
  CHECK(!id.empty());
  CHECK(id.find_first_not_of("0123456789") == std::string::npos);

  auto second = d.admin({"publish", "alice", R"({"hello":"again"})", "--id", "K1", "--json"});
  INFO("second: ", second.describe());
  REQUIRE(second.code() == 0);
  CHECK(second.out.at("id").as_string() == id.c_str());
  CHECK(second.out.at("duplicate").as_bool() == true);

  auto inbox = d.inbox_key("alice");
  REQUIRE_MESSAGE(wait_until(
                      [&] {
                        return d.redis().integer({"XLEN", inbox}) >= 1;
                      },
                      10s),
                  d.logs());
  // All three claims are counted once the workers flushed: then nothing else can arrive.
  json::object st;
  bool settled = wait_until(
      [&] {
        st = d.status();
        return counter(st, "delivered") == 1 && counter(st, "duplicates_suppressed") == 2;
      },
      10s, 100ms);
  INFO("status: ", json::serialize(st));
  CHECK(settled);
  CHECK(counter(st, "published") == 1);

  auto entries = d.redis().inbox(inbox);
  REQUIRE(entries.size() == 1);
  CHECK(entries[0].first == "1-0");
  auto frame = parse_or_null(entries[0].second);
  INFO("frame: ", entries[0].second);
  REQUIRE(frame.is_object());
  CHECK(frame.at("type").as_string() == "message");
  CHECK(frame.at("id").as_string() == id.c_str());
  CHECK(frame.at("kind").as_string() == "message");
  CHECK(frame.at("offset").as_int64() == 1);
  CHECK(frame.at("data") == json::parse(R"({"hello":"world","n":1})"));

  // The key finds the message for the dedup window: trace KEY --user USER.
  auto traced = d.admin({"trace", "K1", "--user", "alice", "--json"});
  INFO("trace by key: ", traced.describe());
  REQUIRE(traced.code() == 0);
  CHECK(traced.out.at("id").as_string() == id.c_str());
  auto text = d.admin({"trace", "K1", "--user", "alice"});
  CHECK(text.run.out.rfind("message " + id + " (idempotency key K1 of alice)", 0) == 0);
  auto unknown = d.admin({"trace", "K9", "--user", "alice", "--json"});
  CHECK(unknown.code() == 1);
  CHECK(unknown.error() == "not_found");
  auto no_user = d.admin({"trace", "K1"});
  CHECK(no_user.code() == 1);
  CHECK(no_user.run.err.find("trace K1 --user USER") != std::string::npos);
  // publish --id names the key beside the id
  auto plain = d.admin({"publish", "alice", R"({"n":2})", "--id", "K2"});
  CHECK(plain.run.out.find("(idempotency key K2 of alice)") != std::string::npos);
}

TEST_CASE("CLI contract: exit codes, JSON errors, error: lines") {
  deployment d("cli");

  auto expect_error = [](const cli_result& r, int code, const std::string& error) {
    INFO(r.describe());
    CHECK(r.code() == code);
    CHECK(r.error_line());
    REQUIRE(r.out.is_object());  // exactly one JSON object on stdout
    CHECK(r.error() == error);
    CHECK(r.out.as_object().contains("message"));
  };

  SUBCASE("unknown command: usage error, exit 2") {
    auto r = d.admin({"frobnicate", "--json"});
    INFO(r.describe());
    CHECK(r.code() == 2);
    CHECK(r.error_line());
    REQUIRE(r.out.is_object());
    CHECK(!r.error().empty());
  }

  SUBCASE("unknown option: usage error, exit 2, for both programs") {
    auto r = d.admin({"status", "--no-such-option", "--json"});
    INFO(r.describe());
    CHECK(r.code() == 2);
    CHECK(r.error_line());
    REQUIRE(r.out.is_object());
    CHECK(!r.error().empty());

    auto w = run_cli("pushonce-worker", {"--no-such-option"});
    INFO(w.describe());
    CHECK(w.code() == 2);
    CHECK(w.error_line());
  }

  SUBCASE("missing argument: usage error, exit 2") {
    auto r = d.admin({"join", "--json"});
    INFO(r.describe());
    CHECK(r.code() == 2);
    CHECK(r.error_line());
    REQUIRE(r.out.is_object());
    CHECK(!r.error().empty());
  }

  SUBCASE("leave of a user who is not queued: not_queued, exit 1") {
    expect_error(d.admin({"leave", "nobody", "--json"}), 1, "not_queued");
    auto plain = d.admin({"leave", "nobody"});
    INFO(plain.describe());
    CHECK(plain.code() == 1);
    CHECK(plain.error_line());
  }

  SUBCASE("join of a queue no leader runs: not_found, exit 1, nothing written") {
    expect_error(d.admin({"join", "bob", "--queue", "nowhere", "--json"}), 1, "not_found");
    CHECK(d.redis().integer(
              {"EVAL", "return #redis.call('KEYS', ARGV[1])", "0", d.ns() + ":{q:nowhere}*"}) == 0);
  }

  SUBCASE("join twice: already_queued, exit 1") {
    d.start_leader();
    REQUIRE_MESSAGE(d.wait_ready(), d.ready_failure());
    auto r = d.admin({"join", "bob", "--json"});
    INFO(r.describe());
    REQUIRE(r.code() == 0);
    CHECK(r.out.at("position").as_int64() == 1);
    CHECK(r.out.at("ticket").as_int64() >= 1);
    expect_error(d.admin({"join", "bob", "--json"}), 1, "already_queued");
    // The queue is unchanged, and leave then works.
    auto pos = d.admin({"position", "bob", "--json"});
    INFO(pos.describe());
    CHECK(pos.code() == 0);
    CHECK(pos.out.at("position").as_int64() == 1);
    auto left = d.admin({"leave", "bob", "--json"});
    INFO(left.describe());
    CHECK(left.code() == 0);
    CHECK(left.out.at("removed").as_bool() == true);
  }

  SUBCASE("unreachable Redis: redis_unavailable, exit 1 within 5 s") {
    // Both give up only after their timeouts: run them side by side.
    auto status_call = std::async(std::launch::async, [&] {
      return run_cli("pushonce-leader",
                     {"status", "--json", "--redis", "redis://127.0.0.1:1", "--namespace", d.ns()},
                     {}, 15s);
    });
    auto join =
        run_cli("pushonce-leader", {"join", "carol", "--redis", "redis://127.0.0.1:1"}, {}, 15s);
    auto r = status_call.get();
    INFO(r.describe(), "\nelapsed ms: ", r.elapsed.count());
    CHECK(!r.run.timed_out);
    CHECK(r.elapsed < 5s);
    CHECK(r.code() == 1);
    CHECK(r.error_line());
    CHECK(r.error() == "redis_unavailable");

    INFO(join.describe(), "\nelapsed ms: ", join.elapsed.count());
    CHECK(join.elapsed < 5s);
    CHECK(join.code() == 1);
    CHECK(join.error_line());
    CHECK(join.run.out.empty());  // without --json nothing on stdout
  }

  SUBCASE("--help and --version exit 0") {
    for (const char* program : {"pushonce-leader", "pushonce-worker", "pushonce-gateway"}) {
      for (const char* flag : {"--help", "--version"}) {
        auto r = run_cli(program, {flag});
        INFO(program, " ", flag, ": ", r.describe());
        CHECK(r.code() == 0);
        CHECK(!r.run.out.empty());
        CHECK(r.run.err.empty());
      }
    }
    auto v = run_cli("pushonce-leader", {"--version"});
    CHECK(v.run.out.rfind("pushonce-leader ", 0) == 0);
  }
}

TEST_CASE("SIGTERM: the leader and the workers exit 0 within 5 s") {
  deployment d("sigterm");
  d.start_leader();
  for (int i = 0; i < 3; ++i) d.start_worker();
  REQUIRE_MESSAGE(d.wait_ready(), d.logs());
  // Heartbeats are written: status lists every worker.
  REQUIRE_MESSAGE(wait_until([&] { return d.status().at("workers").as_array().size() == 3; }, 5s),
                  d.logs());

  // Some work in flight while stopping makes the drain path run too.
  auto pub = d.admin({"publish", "dave", R"({"x":1})", "--json"});
  REQUIRE(pub.code() == 0);

  auto start = clock_type::now();
  d.get(kind::leader).kill(SIGTERM);
  for (auto* w : d.all(kind::worker)) w->kill(SIGTERM);
  auto leader_status = d.get(kind::leader).wait(5s);
  INFO(d.logs());
  REQUIRE(leader_status.has_value());
  CHECK(*leader_status == 0);
  for (auto* w : d.all(kind::worker)) {
    auto remaining =
        std::chrono::duration_cast<std::chrono::milliseconds>(start + 5s - clock_type::now());
    auto s = w->wait(std::max(remaining, 0ms));
    REQUIRE(s.has_value());
    CHECK(*s == 0);
  }

  // A clean stop hands back the lease and removes the heartbeats.
  auto st = d.status();
  INFO("status: ", json::serialize(st));
  CHECK(st.at("leader").is_null());
  CHECK(st.at("workers").as_array().empty());
}

TEST_CASE("pipeline: a queue's fence above the leaders' counter: assignment resumes everywhere") {
  // A failover that lost the counter's last INCRs leaves a queue fenced above every token
  // the counter will hand out for a long time. The leader holding the lease is the only
  // one acting: it must get past the fence (and the other queues must not wait on it).
  deployment d("fence");
  const std::vector<std::string> args{"--queue", "default",    "--queue",
                                      "second",  "--lease-ms", "900"};
  d.start_leader(args);
  d.start_leader(args);  // a standby
  d.start_worker();
  REQUIRE_MESSAGE(d.wait_ready(), d.logs());
  d.redis().cmd({"SET", d.k().queue("default", "fence"), "999999"});

  for (const auto& [user, queue, desk] :
       {std::tuple{"alice", "default", "desk-1"}, std::tuple{"bob", "second", "desk-2"}}) {
    auto j = d.admin({"join", user, "--queue", queue, "--json"});
    INFO(j.describe());
    REQUIRE(j.code() == 0);
    auto add = d.admin({"resource", "add", desk, "--queue", queue, "--json"});
    INFO(add.describe());
    REQUIRE(add.code() == 0);
  }
  CHECK_MESSAGE(wait_until([&] { return d.redis().inbox(d.inbox_key("bob")).size() == 1; }, 15s),
                d.logs());
  CHECK_MESSAGE(wait_until([&] { return d.redis().inbox(d.inbox_key("alice")).size() == 1; }, 15s),
                d.logs());
  // Later assignments go on too (the fence now follows the leader's token).
  auto j = d.admin({"join", "carol", "--json"});
  REQUIRE(j.code() == 0);
  auto add = d.admin({"resource", "add", "desk-3", "--json"});
  REQUIRE(add.code() == 0);
  CHECK_MESSAGE(wait_until([&] { return d.redis().inbox(d.inbox_key("carol")).size() == 1; }, 15s),
                d.logs());
}

}  // namespace test_pipeline_e2e
