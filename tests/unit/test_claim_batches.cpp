// Batches of claims (core/lua/claim): split per cluster slot (claim_groups), the race for a
// bus payload (claim_batch_for) and the sweeper's marks (batch_done_command, digest).
#include "core/lua/claim.hpp"
// (the header under test first: it is self-contained)

#include <doctest/doctest.h>

#include <vector>

#include "core/redis/hash_slot.hpp"
#include "core/redis/scripts.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_claim_batches_unit {

using pushonce::bus_message;
using pushonce::keys;
using pushonce::lua::claim_batch_for;
using pushonce::lua::claim_groups;
using pushonce::lua::parse_claim_batch_reply;
using pushonce::lua::race_before_parse;
using pushonce::lua::script_command;
using pushonce::redis::reply;

namespace {
bus_message msg(std::string id, std::string user) {
  bus_message m;
  m.id = std::move(id);
  m.user = std::move(user);
  return m;
}
}  // namespace

TEST_CASE("claim_groups: one group per slot, in first-seen order, indices in batch order") {
  keys k("ns", 16);
  // alice, bob and carol are in different shards, so slots (checked, so the test means
  // what it says).
  REQUIRE(pushonce::redis::hash_slot(k.claim("alice", "1")) !=
          pushonce::redis::hash_slot(k.claim("bob", "1")));
  std::vector<bus_message> batch = {msg("1", "alice"), msg("2", "bob"), msg("3", "alice"),
                                    msg("4", "carol"), msg("5", "bob")};
  auto groups = claim_groups(k, batch);
  REQUIRE(groups.size() == 3);
  CHECK(groups[0] == std::vector<std::size_t>{0, 2});
  CHECK(groups[1] == std::vector<std::size_t>{1, 4});
  CHECK(groups[2] == std::vector<std::size_t>{3});

  CHECK(claim_groups(k, {}).empty());
  std::vector<bus_message> one_user = {msg("1", "dave"), msg("2", "dave")};
  CHECK(claim_groups(k, one_user).size() == 1);
  // The users of one shard (a custom publish's batch) are one group: one claim call.
  std::vector<bus_message> one_shard;
  for (int i = 0; one_shard.size() < 20; ++i) {
    auto u = "user" + std::to_string(i);
    if (k.shard_of(u) == 5) one_shard.push_back(msg(std::to_string(i + 1), u));
  }
  CHECK(claim_groups(k, one_shard).size() == 1);
  // On one shard (a single Redis's default) every user is.
  CHECK(claim_groups(keys("ns"), batch).size() == 1);
}

TEST_CASE("claim_batch_for: one key named by the first message, owner and lease") {
  keys k("ns");
  std::vector<bus_message> batch = {msg("8192", "alice"), msg("12288", "bob")};
  auto cmd =
      script_command(claim_batch_for(k, batch.front().id, "w1:7", std::chrono::milliseconds(5000)));
  const std::vector<std::string> want{
      "EVALSHA", pushonce::redis::get_script("claim_batch").sha1, "1", "ns:b:8192", "w1:7", "5000"};
  CHECK(std::vector<std::string>(cmd.begin(), cmd.end()) == want);
  // The same payload heard by another worker races for the same key; the next does not.
  std::vector<bus_message> next = {msg("16384", "carol")};
  CHECK(script_command(claim_batch_for(k, batch.front().id, "w2:1",
                                       std::chrono::milliseconds(5000)))[3] == cmd[3]);
  CHECK(script_command(claim_batch_for(k, next.front().id, "w1:8",
                                       std::chrono::milliseconds(5000)))[3] == "ns:b:16384");
}

TEST_CASE("race_before_parse: a payload one claim call takes whole races on its first line") {
  const std::string a =
      R"({"id":"8192","user":"alice","src":"bus:0","kind":"message","data":{},"ts":1})";
  const std::string b =
      R"({"id":"12288","user":"bob","src":"bus:0","kind":"message","data":{},"ts":1})";
  std::vector<std::string_view> two{a, b};
  auto first = race_before_parse(two, 200);
  REQUIRE(first);
  CHECK(first->id == "8192");
  CHECK(first->user == "alice");
  CHECK(race_before_parse(two, 2));
  // One line: no race (claim.lua decides at about the race's cost). More lines than one
  // claim call takes: parsed and raced per part. A first line that is not a bus message:
  // parsed, the race named by the first message that is one.
  CHECK_FALSE(race_before_parse(std::vector<std::string_view>{a}, 200));
  CHECK_FALSE(race_before_parse(two, 1));
  CHECK_FALSE(race_before_parse(std::vector<std::string_view>{"{\"id\":", b}, 200));
  CHECK_FALSE(race_before_parse(std::vector<std::string_view>{}, 200));
}

TEST_CASE("parse_claim_batch_reply: 1 won, 0 lost, anything else is not the script's") {
  reply won, lost, two, text, nil;
  won.kind = lost.kind = two.kind = reply::type::integer;
  won.integer = 1;
  lost.integer = 0;
  two.integer = 2;
  text.kind = reply::type::string;
  text.str = "1";
  CHECK(parse_claim_batch_reply(won) == true);
  CHECK(parse_claim_batch_reply(lost) == false);
  CHECK_FALSE(parse_claim_batch_reply(two).has_value());
  CHECK_FALSE(parse_claim_batch_reply(text).has_value());
  CHECK_FALSE(parse_claim_batch_reply(nil).has_value());
}

TEST_CASE("batch_done_command: the race key becomes d:<n>:<digest> for the dedup window") {
  keys k("ns");
  std::vector<bus_message> batch = {msg("8192", "alice"), msg("12288", "bob")};
  batch[0].raw = "line one";
  batch[1].raw = "line two";
  auto cmd = pushonce::lua::batch_done_command(k, batch, std::chrono::milliseconds(120000));
  const std::string digest = pushonce::lua::batch_digest(batch);
  const std::vector<std::string> want{"SET", "ns:b:8192", "d:2:" + digest, "PX", "120000"};
  CHECK(std::vector<std::string>(cmd.begin(), cmd.end()) == want);
  // FNV-1a 64 of the payload text: "" is the offset basis; a known value; lines joined by \n.
  CHECK(pushonce::lua::batch_digest(std::vector<std::string_view>{""}) == "cbf29ce484222325");
  CHECK(pushonce::lua::batch_digest(std::vector<std::string_view>{"a"}) == "af63dc4c8601ec8c");
  CHECK(digest == pushonce::lua::batch_digest(std::vector<std::string_view>{"line one\nline two"}));
  CHECK(digest != pushonce::lua::batch_digest(std::vector<std::string_view>{"line one"}));
}

TEST_CASE("batch_finished: only delivered, done and dead are final") {
  using pushonce::lua::claim_outcome;
  using st = pushonce::lua::claim_state;
  auto of = [](std::initializer_list<st> states) {
    std::vector<claim_outcome> v;
    for (auto s : states) v.push_back(claim_outcome{s, 0, {}});
    return v;
  };
  CHECK(pushonce::lua::batch_finished(of({st::delivered, st::done, st::dead})));
  for (auto open : {st::taken, st::won, st::failed, st::expired})
    CHECK_FALSE(pushonce::lua::batch_finished(of({st::delivered, open})));
}

TEST_CASE("parse_batch_done: d:<n>:<digest> with n > 0; a race's owner token or nil is none") {
  auto str = [](std::string s) {
    reply r;
    r.kind = reply::type::string;
    r.str = std::move(s);
    return r;
  };
  auto m = pushonce::lua::parse_batch_done(str("d:3:0123456789abcdef"));
  REQUIRE(m.has_value());
  CHECK(m->messages == 3);
  CHECK(m->digest == "0123456789abcdef");
  for (auto bad : {"d:0:0123456789abcdef", "d:3", "d:3:", "d:3:0123", "d::0123456789abcdef",
                   "d:x:0123456789abcdef", "w1:1", "worker-1:7", ""})
    CHECK_FALSE(pushonce::lua::parse_batch_done(str(bad)).has_value());
  CHECK_FALSE(pushonce::lua::parse_batch_done(reply{}).has_value());
}

TEST_CASE("read_values: the value of each key of MGET and GET reads, nullopt for failed reads") {
  std::vector<pushonce::lua::record_ref> ks{{"a", {}}, {"b", {}}, {"c", {}}};
  auto reads = pushonce::lua::claim_record_reads(ks, false, 2);  // MGET a b, MGET c
  REQUIRE(reads.size() == 2);
  reply two;
  two.kind = reply::type::array;
  two.elements.resize(2);
  two.elements[1].kind = reply::type::string;
  two.elements[1].str = "d:1";
  std::vector<std::optional<reply>> replies{two, std::nullopt};
  auto v = pushonce::lua::read_values(reads, replies);
  REQUIRE(v.size() == 3);
  CHECK(v[0].has_value());
  CHECK(v[0]->is_nil());
  CHECK(v[1]->str == "d:1");
  CHECK_FALSE(v[2].has_value());
}

}  // namespace test_claim_batches_unit
