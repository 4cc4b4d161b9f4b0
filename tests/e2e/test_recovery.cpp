// End-to-end tests of the recovery and operator paths with the real programs: messages
// published while no worker runs, dead letters (list, replay, purge) and `trace`, the
// leader handing its lease over on SIGTERM, and the `accept` / `token` admin commands.

#include <doctest/doctest.h>

#include <algorithm>
#include <boost/json.hpp>
#include <csignal>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/jwt.hpp"
#include "core/keys.hpp"
#include "core/lua/claim.hpp"
#include "core/lua/publish.hpp"
#include "core/message.hpp"
#include "core/redis/scripts.hpp"
#include "tests/support/deployment.hpp"
#include "tests/support/sync_redis.hpp"
#include "tests/support/wait.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_recovery_e2e {

using namespace pushonce;
using pushonce::test::environment;
using pushonce::test::let_lapse;
using pushonce::test::observe_quiet;
using pushonce::test::process;
using pushonce::test::run_result;
using pushonce::test::wait_for;
using pushonce::test::wait_until;
using namespace std::chrono_literals;
namespace json = boost::json;

namespace {

/// The claim record of the message `id` that `user`'s inbox holds (the record's field binds
/// the user and the frame: lua::record_field, from the frame's tail after its offset).
lua::record_ref delivered_record(pushonce::test::deployment& d, const std::string& user,
                                 const std::string& id) {
  for (const auto& [entry, frame] : d.redis().inbox(d.k().user(user, "inbox"))) {
    if (frame.find(R"("id":")" + id + "\"") == std::string::npos) continue;
    auto at = frame.find(R"("offset":)");
    auto tail = frame.find_first_not_of("0123456789", at + 9);
    return {d.k().claim_bucket(user, id), lua::record_field(user, id, frame.substr(tail))};
  }
  FAIL("no message ", id, " in ", user, "'s inbox");
  return {};
}

// One namespace on the shared redis-server, with the programs started in it.
struct deployment : pushonce::test::deployment {
  explicit deployment(const std::string& what, environment env = {})
      : pushonce::test::deployment("rec", what, std::move(env)) {}

  /// pushonce-leader ARGS --json.
  run_result cli(std::vector<std::string> args, environment extra = {}) {
    args.push_back("--json");
    return admin(std::move(args), std::move(extra), 10s).run;
  }
};

std::string id_of(const json::object& o) {
  return std::string(o.at("id").as_string());
}

/// Publishes `n` messages to `user` as ONE bus payload (publish.lua, bus shard 0, the
/// programs' default windows); their ids in order.
std::vector<std::string> publish_payload(deployment& d, const std::string& user, int n) {
  auto load = d.redis().cmd({"SCRIPT", "LOAD", redis::get_script("publish").text});
  REQUIRE(load->type == REDIS_REPLY_STRING);
  lua::publish_settings s{0, 120s, 60s};
  std::vector<lua::publish_item> items;
  for (int i = 0; i < n; ++i) items.push_back({user, "{\"n\":" + std::to_string(i) + "}", {}});
  auto r = d.redis().cmd(lua::script_command(lua::publish_for(d.k(), s, items)));
  REQUIRE(r->type == REDIS_REPLY_ARRAY);
  REQUIRE(r->elements == 2 * static_cast<std::size_t>(n));
  std::vector<std::string> ids;
  for (int i = 0; i < n; ++i) ids.emplace_back(r->element[2 * i]->str, r->element[2 * i]->len);
  return ids;
}

}  // namespace

TEST_CASE("recovery: messages published while no worker runs are delivered once when one starts") {
  deployment d("backlog");
  std::set<std::string> ids;
  for (int i = 1; i <= 5; ++i)
    ids.insert(id_of(d.admin_json({"publish", "alice", "{\"n\":" + std::to_string(i) + "}"})));
  CHECK(ids.size() == 5);
  // Nobody heard the bus: only the outbox has them.
  d.start_worker({"--lease-ms", "1000"});
  d.start_worker({"--lease-ms", "1000"});
  auto inbox = d.k().user("alice", "inbox");
  REQUIRE(wait_until([&] { return d.redis().inbox(inbox).size() == 5; }, 15s));
  observe_quiet(1500ms, "a sixth delivery from another sweep");
  auto entries = d.redis().inbox(inbox);
  REQUIRE(entries.size() == 5);
  std::set<std::string> delivered;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    CHECK(entries[i].first == std::to_string(i + 1) + "-0");
    delivered.insert(std::string(json::parse(entries[i].second).at("id").as_string()));
  }
  CHECK(delivered == ids);
  REQUIRE(wait_until([&] { return d.counter("redelivered") == 5; }, 5s));
  CHECK(d.counter("delivered") == 5);
}

TEST_CASE(
    "recovery: a batch won by a worker that died before claiming it is delivered once by the "
    "sweeper") {
  deployment d("batchrace");
  for (int i = 0; i < 3; ++i) d.start_worker({"--lease-ms", "1000", "--sweep-interval-ms", "200"});
  REQUIRE(d.wait_subscribers(d.k().bus_channel(), 3));
  // The next payload on bus shard 0 starts with id (seq + 1) * 4096. A worker that won the
  // race for it and was killed at once leaves exactly this key behind (claim_batch.lua).
  auto seq = d.redis().text({"GET", d.k().bus(0, "seq")});
  auto next = std::to_string(((seq.empty() ? 0 : std::stoll(seq)) + 1) * 4096);
  d.redis().cmd({"SET", d.k().batch(next), "dead-worker:1", "PX", "60000"});

  auto ids = publish_payload(d, "alice", 2);
  REQUIRE(ids.front() == next);
  auto inbox = d.k().user("alice", "inbox");
  // Every worker heard it and lost the race: nothing on the live path. The sweeper looks at
  // outbox entries only once they are a lease (1 s) old.
  REQUIRE(wait_until([&] { return d.counter("duplicates_suppressed") == 6; }, 5s));
  REQUIRE(wait_until([&] { return d.redis().inbox(inbox).size() == 2; }, 10s));
  CHECK(json::parse(d.redis().inbox(inbox)[1].second).at("id").as_string() == ids[1]);
  REQUIRE(wait_until([&] { return d.counter("redelivered") == 2; }, 5s));
  // Both by the sweeper (its re-drives), none on the live path: counted, not timed, so a
  // loaded machine that takes longer than the lease to get here does not matter.
  CHECK(d.counter("delivered") == 2);

  // The next payload is raced for as usual: one worker wins and delivers it at once, then
  // marks it finished for the dedup window (the sweeper reads this key, not 16 records).
  auto more = publish_payload(d, "alice", 16);
  REQUIRE(wait_until([&] { return d.redis().inbox(inbox).size() == 18; }, 900ms));
  REQUIRE(wait_until(
      [&] {
        return d.redis().text({"GET", d.k().batch(more[0])}).starts_with("d:16:");
      },
      2s));
  CHECK(d.redis().integer({"PTTL", d.k().batch(more[0])}) > 60000);
  REQUIRE(wait_until([&] { return d.counter("duplicates_suppressed") == 38; }, 5s));
  // A one-message payload is not raced for: every worker sends it to claim.lua.
  auto single = id_of(d.admin_json({"publish", "alice", R"({"n":99})"}));
  REQUIRE(wait_until([&] { return d.redis().inbox(inbox).size() == 19; }, 900ms));
  CHECK(d.redis().integer({"EXISTS", d.k().batch(single)}) == 0);
  observe_quiet(1500ms, "a second delivery after a lease and a sweep");
  CHECK(d.redis().inbox(inbox).size() == 19);
  CHECK(d.counter("delivered") == 19);
  CHECK(d.counter("redelivered") == 2);
}

TEST_CASE("recovery: a bus message with a bad number kills neither the bus loop nor the sweeper") {
  deployment d("badnumber");
  auto& w = d.start_worker({"--lease-ms", "1000", "--sweep-interval-ms", "200"});
  REQUIRE(d.wait_subscribers(d.k().bus_channel(), 1));
  // A ts of 1.5 ms made Boost.JSON throw inside parse_bus_message: on the bus it ended the
  // subscriber's read loop, in the outbox it ended the sweeper (both in silence).
  const std::string bad = R"({"user":"alice","id":"1","kind":"message","data":1,"ts":1.5})";
  d.redis().cmd({"PUBLISH", d.k().bus_channel(), bad});
  d.redis().cmd({"XADD", d.k().bus(0, "outbox"), "1-1", "m", bad});
  REQUIRE(wait_until([&] { return d.counter("dead_lettered") >= 1; }, 10s));
  CHECK(w.running());

  // Both paths still work: a live publish, and one that only the sweeper can deliver.
  auto first = id_of(d.admin_json({"publish", "alice", R"({"n":1})"}));
  auto inbox = d.k().user("alice", "inbox");
  REQUIRE(wait_until([&] { return d.redis().inbox(inbox).size() == 1; }, 10s));
  // Published now (a message older than the dedup window would be answered "expired").
  auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                 std::chrono::system_clock::now().time_since_epoch())
                 .count();
  // (an id of its own: ids are unique, and a claim is per id)
  d.redis().cmd({"XADD", d.k().bus(0, "outbox"), "*", "m",
                 R"({"id":"409600","user":"bob","src":"bus:0","kind":"message","data":2,"ts":)" +
                     std::to_string(now) + "}"});
  REQUIRE(wait_until([&] { return d.redis().inbox(d.k().user("bob", "inbox")).size() == 1; }, 10s));
  CHECK(w.running());
  CHECK(first.size() > 0);
}

TEST_CASE("recovery: a payload with a malformed line: its other messages are delivered once") {
  // The workers race on a payload's first line before parsing the rest; a first line that
  // is no bus message sends them down the parse-everything path instead. Either way the
  // malformed line is skipped (and logged) and the valid ones are delivered exactly once.
  deployment d("badline");
  for (int i = 0; i < 3; ++i) d.start_worker({"--lease-ms", "1000", "--sweep-interval-ms", "200"});
  REQUIRE(d.wait_subscribers(d.k().bus_channel(), 3));
  auto now = std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                std::chrono::system_clock::now().time_since_epoch())
                                .count());
  auto line = [&](const std::string& id) {
    return R"({"id":")" + id + R"(","user":"alice","src":"bus:0","kind":"message","data":{"id":")" +
           id + R"("},"ts":)" + now + "}";
  };
  const std::string bad = R"({"id":"x","user":"alice"})";
  auto inbox = d.k().user("alice", "inbox");
  // Malformed first: parsed whole, raced on the first valid message.
  d.redis().cmd(
      {"PUBLISH", d.k().bus_channel(), bad + "\n" + line("40960") + "\n" + line("45056")});
  REQUIRE(wait_until([&] { return d.redis().inbox(inbox).size() == 2; }, 10s));
  CHECK(wait_until([&] { return d.counter("duplicates_suppressed") == 4; }, 5s));
  // Malformed in the middle: raced on the first line before parsing.
  d.redis().cmd(
      {"PUBLISH", d.k().bus_channel(), line("49152") + "\n" + bad + "\n" + line("53248")});
  REQUIRE(wait_until([&] { return d.redis().inbox(inbox).size() == 4; }, 10s));
  observe_quiet(1500ms, "a second delivery after a lease and a sweep");
  std::vector<std::string> ids;
  for (const auto& [entry, frame] : d.redis().inbox(inbox))
    ids.emplace_back(json::parse(frame).at("id").as_string());
  CHECK(ids == std::vector<std::string>{"40960", "45056", "49152", "53248"});
  CHECK(d.counter("delivered") == 4);
  CHECK(d.logs().find("malformed bus message") != std::string::npos);
}

TEST_CASE("recovery: outbox entries trimmed before any sweep are counted as retention_exceeded") {
  deployment d("trimmed", {{"PUSHONCE_OUTBOX_RETENTION_MS", "1000"}});
  auto load = d.redis().cmd({"SCRIPT", "LOAD", redis::get_script("publish").text});
  REQUIRE(load->type == REDIS_REPLY_STRING);
  // The publishes here keep entries 100 ms (the script takes the retention from its caller);
  // the sweeper tells a trim from the stream's counts, whatever the retention was.
  lua::publish_settings s{0, 120s, 100ms};
  int published = 0;
  auto publish_one = [&] {
    std::vector<lua::publish_item> one{{"tom", "{\"n\":" + std::to_string(published++) + "}", {}}};
    auto r = d.redis().cmd(lua::script_command(lua::publish_for(d.k(), s, one)));
    REQUIRE(r->type == REDIS_REPLY_ARRAY);
  };
  // No worker runs: nothing is delivered, and after the retention the next publish trims
  // the old entries (whole stream nodes: enough entries to fill several).
  while (published < 200) publish_one();
  auto outbox = d.k().bus(0, "outbox");
  long long kept = 0;
  wait_for(
      "a publish trimming the entries past the retention",
      [&] {
        publish_one();
        kept = d.redis().integer({"XLEN", outbox});
        return kept < published;
      },
      10s, 50ms);
  CHECK(d.counter("retention_exceeded") <= 0);

  d.start_worker({"--lease-ms", "1000"});
  REQUIRE(wait_until([&] { return d.counter("retention_exceeded") >= 1; }, 10s));
  // What the outbox still held is delivered once; the trimmed messages are gone.
  auto inbox = d.k().user("tom", "inbox");
  REQUIRE(wait_until([&] { return d.redis().integer({"XLEN", inbox}) == kept; }, 10s));
  observe_quiet(1500ms, "a trimmed message delivered, or one counted again");
  CHECK(d.redis().integer({"XLEN", inbox}) == kept);
  // Every trimmed entry (one message each here) counted once, not again on every sweep.
  CHECK(d.counter("retention_exceeded") == published - kept);
}

TEST_CASE("recovery: a worker paused past the dedup window does not deliver a message again") {
  // A 3 s window: the claim record of a delivered message is gone 3 s later. A worker that
  // was stopped (SIGSTOP: a VM pause, a debugger) before the message was published still
  // has it in its socket when it resumes, finds no claim record, and must not deliver it.
  deployment d("paused",
               {{"PUSHONCE_DEDUP_WINDOW_MS", "3000"}, {"PUSHONCE_OUTBOX_RETENTION_MS", "3000"}});
  auto& paused = d.start_worker({"--lease-ms", "1000"});
  REQUIRE(d.wait_subscribers(d.k().bus_channel(), 1));
  paused.kill(SIGSTOP);
  d.start_worker({"--lease-ms", "1000"});
  REQUIRE(d.wait_subscribers(d.k().bus_channel(), 2));
  auto id = d.publish("paula", R"({"once":true})");
  auto inbox = d.k().user("paula", "inbox");
  REQUIRE(wait_until([&] { return d.redis().integer({"XLEN", inbox}) == 1; }, 10s));
  // Past the window: the claim record has expired.
  REQUIRE(wait_until(
      [&] {
        auto at = delivered_record(d, "paula", id);
        return d.redis().integer({"HEXISTS", at.key, at.field}) == 0;
      },
      10s));
  paused.kill(SIGCONT);
  REQUIRE(wait_until([&] { return d.counter("retention_exceeded") >= 1; }, 10s));
  observe_quiet(500ms, "the paused worker delivering again");
  CHECK(d.redis().integer({"XLEN", inbox}) == 1);
  CHECK(d.logs().find("heard past the dedup window") != std::string::npos);
}

TEST_CASE("recovery: a dead letter older than the dedup window is delivered when replayed") {
  // Replay publishes the message again now: claim.lua refuses a message with no claim record
  // published longer ago than the window, and this one was published in 2023.
  deployment d("oldletter",
               {{"PUSHONCE_DEDUP_WINDOW_MS", "3000"}, {"PUSHONCE_OUTBOX_RETENTION_MS", "3000"}});
  d.start_worker({"--lease-ms", "1000"});
  REQUIRE(d.wait_subscribers(d.k().bus_channel(), 1));
  const std::string old =
      R"({"id":"4096","user":"olga","src":"bus:0","kind":"message","data":{"old":true},"ts":1700000000000})";
  d.redis().cmd({"XADD", d.key("dead-letters"), "*", "id", "4096", "user", "olga", "src", "bus:0",
                 "reason", "test", "attempts", "5", "m", old});
  auto replayed = d.admin_json({"dead-letters", "replay", "4096"});
  CHECK(replayed.at("replayed") == true);
  auto inbox = d.k().user("olga", "inbox");
  REQUIRE(wait_until([&] { return d.redis().integer({"XLEN", inbox}) == 1; }, 10s));
  auto frame = json::parse(d.redis().inbox(inbox)[0].second).as_object();
  CHECK(frame.at("data").at("old") == true);
  CHECK(frame.at("ts").as_int64() > 1700000000000);
  CHECK(d.counter("retention_exceeded") <= 0);
}

TEST_CASE(
    "recovery: a replayed dead letter is delivered although its payload was marked finished") {
  // A message that began a payload marked finished ("d:16:<digest>" on its race key) and is
  // then replayed while no worker hears the bus: the new outbox entry has the same first id,
  // so only the sweeper can deliver it, and it must not take the payload's mark for this
  // entry's (one line, and a new ts in it).
  deployment d("replaymark");
  auto& first = d.start_worker({"--lease-ms", "1000", "--sweep-interval-ms", "200"});
  REQUIRE(d.wait_subscribers(d.k().bus_channel(), 1));
  auto ids = publish_payload(d, "alice", 16);
  auto id = ids.front();
  auto inbox = d.k().user("alice", "inbox");
  REQUIRE(wait_until([&] { return d.redis().inbox(inbox).size() == 16; }, 10s));
  REQUIRE(wait_until(
      [&] {
        return d.redis().text({"GET", d.k().batch(id)}).starts_with("d:16:");
      },
      2s));
  REQUIRE(first.stop() == 0);
  // As if it had then been dead-lettered: only a message marked dead is replayed.
  const std::string m = R"({"id":")" + id +
                        R"(","user":"alice","src":"bus:0","kind":"message","data":{"n":0},"ts":1})";
  auto at = lua::claim_record_ref(d.k(), *parse_bus_message(m));
  d.redis().cmd({"HSET", at.key, at.field, "x:5:test"});
  d.redis().cmd({"XADD", d.key("dead-letters"), "*", "id", id, "user", "alice", "src", "bus:0",
                 "reason", "test", "attempts", "5", "m", m});
  CHECK(d.admin_json({"dead-letters", "replay", id}).at("replayed") == true);
  d.start_worker({"--lease-ms", "1000", "--sweep-interval-ms", "200"});
  REQUIRE(wait_until([&] { return d.redis().inbox(inbox).size() == 17; }, 10s));
  CHECK(json::parse(d.redis().inbox(inbox)[16].second).at("id").as_string() == id);
  CHECK(wait_until([&] { return d.counter("redelivered") == 1; }, 5s));  // by the sweeper
}

TEST_CASE("recovery: dead letters the stream's trim drops are counted in dead_letters_trimmed") {
  deployment d("deadtrim");
  auto id = id_of(d.admin_json({"publish", "ida", R"({"poison":true})"}));
  // 10,250 older letters: the next one added trims whole stream nodes (MAXLEN ~ 10000).
  d.redis().cmd({"EVAL",
                 "for i = 1, 10250 do redis.call('XADD', KEYS[1], '*', 'id', i) end return 1", "1",
                 d.key("dead-letters")});
  // One worker that "crashed" holding an expired lease: with --max-attempts 1 the next
  // claim dead-letters the message.
  auto outbox = d.redis().cmd({"XRANGE", d.k().bus(0, "outbox"), "-", "+"});
  REQUIRE(outbox->type == REDIS_REPLY_ARRAY);
  REQUIRE(outbox->elements == 1);
  auto* fields = outbox->element[0]->element[1];
  auto m = parse_bus_message(std::string(fields->element[1]->str, fields->element[1]->len));
  REQUIRE(m);
  std::vector<bus_message> batch{*m};
  auto load = d.redis().cmd({"SCRIPT", "LOAD", redis::get_script("claim").text});
  REQUIRE(load->type == REDIS_REPLY_STRING);
  lua::claim_settings s;
  s.owner = "crashed";
  s.lease = 1ms;
  s.epoch = "E-crashed";
  auto r = d.redis().cmd(lua::script_command(lua::claim_for(d.k(), s, batch, {true})));
  REQUIRE(r->type == REDIS_REPLY_ARRAY);
  let_lapse(5ms, "the crashed worker's 1 ms lease");
  d.start_worker({"--lease-ms", "1000", "--max-attempts", "1", "--sweep-interval-ms", "200"});
  REQUIRE(wait_until([&] { return d.counter("dead_lettered") == 1; }, 15s));
  REQUIRE(wait_until([&] { return d.counter("dead_letters_trimmed") > 0; }, 5s));
  auto st = d.admin_json({"status"});
  CHECK(st.at("counters").at("dead_letters_trimmed").as_int64() ==
        d.counter("dead_letters_trimmed"));
  CHECK(d.redis().integer({"XLEN", d.key("dead-letters")}) <= 10100);
  (void)id;
}

TEST_CASE("recovery: replaying a delivered message is refused (not_dead); nothing is sent") {
  deployment d("replaydelivered");
  d.start_worker({"--lease-ms", "1000", "--sweep-interval-ms", "200"});
  REQUIRE(d.wait_subscribers(d.k().bus_channel(), 1));
  auto id = id_of(d.admin_json({"publish", "hank", R"({"n":1})"}));
  auto inbox = d.k().user("hank", "inbox");
  REQUIRE(wait_until([&] { return d.redis().inbox(inbox).size() == 1; }, 10s));
  // Two dead-letter entries for the delivered id (as an older worker could leave them).
  const std::string m = R"({"id":")" + id +
                        R"(","user":"hank","src":"bus:0","kind":"message","data":{"n":1},"ts":1})";
  for (int i = 0; i < 2; ++i)
    d.redis().cmd({"XADD", d.key("dead-letters"), "*", "id", id, "user", "hank", "src", "bus:0",
                   "reason", "test", "attempts", "5", "m", m});
  for (int i = 0; i < 2; ++i) {
    auto r = d.cli({"dead-letters", "replay", id});
    CHECK(r.exit_code == 1);
    auto j = json::parse(r.out).as_object();
    CHECK(j.at("error") == "not_dead");
    CHECK(j.contains("message"));
  }
  observe_quiet(1s, "a redelivery from a sweep or two");
  CHECK(d.redis().inbox(inbox).size() == 1);
  CHECK(d.counter("redelivered") <= 0);
}

TEST_CASE("recovery: a message past --max-attempts is dead-lettered; list, trace, replay, purge") {
  deployment d("dead");
  auto id = id_of(d.admin_json({"publish", "carol", R"({"poison":true})"}));
  // Three workers that "crashed" holding a lease (a lease-only claim.lua call through the
  // builder: an empty tail takes a lease without delivering), all expired: attempts 1..3.
  auto outbox = d.redis().cmd({"XRANGE", d.k().bus(0, "outbox"), "-", "+"});
  REQUIRE(outbox->type == REDIS_REPLY_ARRAY);
  REQUIRE(outbox->elements == 1);
  auto* fields = outbox->element[0]->element[1];
  REQUIRE(fields->elements == 2);
  auto m = parse_bus_message(std::string(fields->element[1]->str, fields->element[1]->len));
  REQUIRE(m);
  REQUIRE(m->id == id);
  std::vector<bus_message> batch{*m};
  auto load = d.redis().cmd({"SCRIPT", "LOAD", redis::get_script("claim").text});
  REQUIRE(load->type == REDIS_REPLY_STRING);
  for (int i = 0; i < 3; ++i) {
    lua::claim_settings s;
    s.owner = "crashed-" + std::to_string(i);
    s.lease = 1ms;
    s.epoch = "E-crashed";
    auto r = d.redis().cmd(lua::script_command(lua::claim_for(d.k(), s, batch, {true})));
    REQUIRE(r->type == REDIS_REPLY_ARRAY);
    REQUIRE(r->elements == 2);
    CHECK(std::string(r->element[0]->str) == "won");
    CHECK(r->element[1]->integer == i + 1);
    let_lapse(5ms, "the crashed worker's 1 ms lease");
  }
  auto record = d.redis().text(lua::record_read(lua::claim_record_ref(d.k(), batch.front())));
  CHECK(record.rfind("l:crashed-2:", 0) == 0);
  CHECK(record.substr(record.size() - 2) == ":3");
  d.start_worker({"--lease-ms", "1000", "--max-attempts", "3"});

  json::array letters;
  REQUIRE(wait_until(
      [&] {
        letters = d.admin_json({"dead-letters", "list"}).at("dead_letters").as_array();
        return letters.size() == 1;
      },
      15s));
  const auto& dl = letters[0].as_object();
  CHECK(dl.at("id").as_string() == id);
  CHECK(dl.at("user") == "carol");
  CHECK(dl.at("attempts") == 3);
  CHECK(dl.at("message").at("data").at("poison") == true);
  CHECK(d.redis().integer({"XLEN", d.k().user("carol", "inbox")}) <= 0);
  REQUIRE(wait_until([&] { return d.counter("dead_lettered") == 1; }, 5s));

  auto trace = d.admin_json({"trace", id}).at("events").as_array();
  std::vector<std::string> events;
  for (auto& e : trace) events.emplace_back(e.at("event").as_string());
  CHECK(events.front() == "published");
  CHECK(std::find(events.begin(), events.end(), "dead_lettered") != events.end());

  // Replay: back through the normal path, delivered exactly once; the list is empty.
  auto replayed = d.admin_json({"dead-letters", "replay", id});
  CHECK(replayed.at("replayed") == true);
  auto inbox = d.k().user("carol", "inbox");
  REQUIRE(wait_until([&] { return d.redis().inbox(inbox).size() == 1; }, 10s));
  CHECK(json::parse(d.redis().inbox(inbox)[0].second).at("id").as_string() == id);
  // trace now reads the replayed outbox line and the new claim record: delivered at 1.
  auto after = d.admin_json({"trace", id}).at("events").as_array();
  REQUIRE(after.size() >= 2);
  CHECK(after[0].at("event") == "published");
  CHECK(after[0].at("user") == "carol");
  CHECK(after[1].at("event") == "delivered");
  CHECK(after[1].at("offset") == 1);
  CHECK(d.admin_json({"dead-letters", "list"}).at("dead_letters").as_array().empty());
  // Replayed (and delivered): a second replay is refused and sends nothing.
  auto again = d.cli({"dead-letters", "replay", id});
  CHECK(again.exit_code == 1);
  CHECK(json::parse(again.out).at("error") == "not_dead");
  observe_quiet(300ms, "a second delivery of the replayed message");
  CHECK(d.redis().inbox(inbox).size() == 1);

  // Purge deletes whatever is listed.
  d.redis().cmd({"XADD", d.k().plain("dead-letters"), "*", "id", "1", "user", "x", "src", "",
                 "reason", "malformed", "attempts", "0", "m", "not json"});
  CHECK(d.admin_json({"dead-letters", "purge"}).at("purged") == 1);
  CHECK(d.admin_json({"dead-letters", "list"}).at("dead_letters").as_array().empty());
  CHECK(d.cli({"dead-letters", "frob"}).exit_code == 2);
  CHECK(d.cli({"trace", "999999999"}).exit_code == 1);
  auto not_an_id = d.cli({"trace", "abc"});
  CHECK(not_an_id.exit_code == 1);
  CHECK(json::parse(not_an_id.out).at("error") == "not_found");
  CHECK(d.cli({"trace"}).exit_code == 2);
}

TEST_CASE("leader: SIGTERM hands the lease to the standby at once, with a newer fencing token") {
  deployment d("handover");
  // A 9 s lease: the standby polls every 3 s, so a takeover well under that comes from the
  // released notice, not from polling or expiry.
  auto& first = d.start_leader({"--lease-ms", "9000"});
  auto leader_key = d.k().plain("leader");
  REQUIRE(wait_until(
      [&] {
        return d.redis().text({"HGET", leader_key, "pid"}) == std::to_string(first.pid());
      },
      10s));
  auto& second = d.start_leader({"--lease-ms", "9000"});
  REQUIRE_MESSAGE(d.wait_ready(), d.ready_failure());  // the standby is up and listening
  auto token1 = std::stoll(d.redis().text({"HGET", leader_key, "fencing_token"}));

  auto t0 = std::chrono::steady_clock::now();
  first.kill(SIGTERM);
  REQUIRE(wait_until(
      [&] {
        return d.redis().text({"HGET", leader_key, "pid"}) == std::to_string(second.pid());
      },
      10s));
  auto took = std::chrono::steady_clock::now() - t0;
  CHECK(took < 1500ms);
  CHECK(first.wait(5s) == 0);
  CHECK(std::stoll(d.redis().text({"HGET", leader_key, "fencing_token"})) > token1);

  // The new leader assigns.
  d.start_worker({});
  REQUIRE(d.wait_subscribers(d.k().bus_channel(), 1));
  CHECK(d.cli({"join", "dan"}).exit_code == 0);
  CHECK(d.cli({"resource", "add", "r1"}).exit_code == 0);
  REQUIRE(wait_until([&] { return d.redis().inbox(d.k().user("dan", "inbox")).size() == 1; }, 10s));
}

TEST_CASE("CLI: accept an assignment; token needs a secret and verifies") {
  deployment d("accept");
  d.start_leader({"--accept-timeout", "60"});
  d.start_worker({});
  REQUIRE(d.wait_subscribers(d.k().bus_channel(), 1));
  CHECK(d.cli({"join", "erin"}).exit_code == 0);
  CHECK(d.cli({"resource", "add", "desk-7"}).exit_code == 0);
  std::string assignment;
  REQUIRE(wait_until(
      [&] {
        auto inbox = d.redis().inbox(d.k().user("erin", "inbox"));
        if (inbox.empty()) return false;
        assignment = std::string(json::parse(inbox[0].second).at("id").as_string());
        return true;
      },
      10s));
  auto a = d.admin_json({"accept", "erin"});
  CHECK(a.at("accepted") == true);
  CHECK(a.at("resource") == "desk-7");
  CHECK(a.at("id").as_string() == assignment);
  CHECK(d.admin_json({"accept", "erin", "--id", assignment}).at("accepted") == true);  // again
  auto wrong = d.cli({"accept", "erin", "--id", "12345"});
  CHECK(wrong.exit_code == 1);
  CHECK(json::parse(wrong.out).at("error") == "not_found");
  CHECK(d.cli({"accept", "nobody"}).exit_code == 1);

  auto no_secret = d.cli({"token", "erin"});
  CHECK(no_secret.exit_code == 1);
  CHECK(json::parse(no_secret.out).at("error") == "no_secret");
  CHECK(no_secret.err.rfind("error:", 0) == 0);
  // A secret shorter than 32 bytes is refused: usage error, exit 2, a clear message.
  auto weak = d.cli({"token", "erin"}, {{"PUSHONCE_JWT_SECRET", "s3"}});
  CHECK(weak.exit_code == 2);
  CHECK(weak.err.find("at least 32") != std::string::npos);
  const std::string s3 = "recovery-test-jwt-secret-0123456789";
  auto t = d.cli({"token", "erin", "--ttl", "60"}, {{"PUSHONCE_JWT_SECRET", s3}});
  REQUIRE(t.exit_code == 0);
  auto token = std::string(json::parse(t.out).at("token").as_string());
  auto who = jwt::verify(token, s3);
  REQUIRE(who.has_value());
  CHECK(who.value().user == "erin");
  CHECK(d.cli({"token", "erin", "--ttl", "0"}, {{"PUSHONCE_JWT_SECRET", s3}}).exit_code == 2);

  // The gateway refuses to start with a short secret: exit 2 and an error: line.
  auto gw = pushonce::test::run_cli("pushonce-gateway", {"--listen", "127.0.0.1:0"},
                                    {{"PUSHONCE_JWT_SECRET", "short-secret"},
                                     {"PUSHONCE_REDIS", d.url()},
                                     {"PUSHONCE_NAMESPACE", d.ns()}},
                                    10s);
  INFO(gw.describe());
  CHECK(gw.code() == 2);
  CHECK(gw.run.err.find("at least 32") != std::string::npos);
}

}  // namespace test_recovery_e2e
