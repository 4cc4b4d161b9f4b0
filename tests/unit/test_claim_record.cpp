#include "core/lua/claim.hpp"
// (the header under test comes first)

#include <doctest/doctest.h>

#include <optional>
#include <span>
#include <vector>

#include "core/lua/session.hpp"
#include "core/redis/scripts.hpp"
#include "tests/support/replies.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_claim_record_unit {

using namespace pushonce;
using kind = lua::claim_record::kind;

using pushonce::test::array;
using pushonce::test::integer;
using pushonce::test::str;

namespace {

bus_message msg(std::string id, std::string user, std::string tail, long long ts = 0) {
  bus_message m;
  m.id = std::move(id);
  m.user = std::move(user);
  m.src = "bus:0";
  m.tail = std::move(tail);
  m.ts = ts;
  return m;
}

/// The record each read key holds, as the sweeper reads them: read_values, then
/// parse_claim_record for each value (std::nullopt where the read failed).
std::vector<std::optional<lua::claim_record>> records_of(
    const std::vector<redis::command>& reads,
    std::span<const std::optional<redis::reply>> replies) {
  std::vector<std::optional<lua::claim_record>> out;
  for (const auto& v : lua::read_values(reads, replies))
    out.push_back(v ? lua::parse_claim_record(*v) : std::nullopt);
  return out;
}

}  // namespace

TEST_CASE("claim record: every form claim.lua, release.lua and dead_letter.lua write") {
  auto none = lua::parse_claim_record(redis::reply{});
  REQUIRE(none);
  CHECK(none->state == kind::none);

  auto d = lua::parse_claim_record(str("17"));
  REQUIRE(d);
  CHECK(d->state == kind::delivered);
  CHECK(d->offset == 17);
  CHECK(d->attempts == 1);

  auto d1 = lua::parse_claim_record(str("5"));  // one digit
  REQUIRE(d1);
  CHECK(d1->state == kind::delivered);
  CHECK(d1->offset == 5);

  auto d2 = lua::parse_claim_record(str("5:2"));  // one digit, second attempt
  REQUIRE(d2);
  CHECK(d2->state == kind::delivered);
  CHECK(d2->offset == 5);
  CHECK(d2->attempts == 2);

  auto d3 = lua::parse_claim_record(str("123456:3"));
  REQUIRE(d3);
  CHECK(d3->offset == 123456);
  CHECK(d3->attempts == 3);

  auto l = lua::parse_claim_record(str("l:w1-7:1700000005000:2"));
  REQUIRE(l);
  CHECK(l->state == kind::leased);
  CHECK(l->owner == "w1-7");
  CHECK(l->until_ms == 1700000005000);
  CHECK(l->attempts == 2);

  // An owner token with ':' in it: until and attempts are the last two fields.
  auto lc = lua::parse_claim_record(str("l:host:42:w:1700000005000:1"));
  REQUIRE(lc);
  CHECK(lc->state == kind::leased);
  CHECK(lc->owner == "host:42:w");
  CHECK(lc->until_ms == 1700000005000);
  CHECK(lc->attempts == 1);

  auto r = lua::parse_claim_record(str("r:3"));
  REQUIRE(r);
  CHECK(r->state == kind::released);
  CHECK(r->attempts == 3);

  auto x = lua::parse_claim_record(str("x:4:max attempts: too many"));
  REQUIRE(x);
  CHECK(x->state == kind::dead);
  CHECK(x->attempts == 4);
  CHECK(x->reason == "max attempts: too many");

  auto x0 = lua::parse_claim_record(str("x:2"));  // no reason
  REQUIRE(x0);
  CHECK(x0->state == kind::dead);
  CHECK(x0->attempts == 2);
  CHECK(x0->reason.empty());
}

TEST_CASE("claim record: delivered, its frame not published yet (claim.lua mode 'n')") {
  auto p = lua::parse_claim_record(str("p:12:3"));
  REQUIRE(p);
  CHECK(p->state == kind::delivered);
  CHECK(p->unpublished);
  CHECK(p->offset == 12);
  CHECK(p->attempts == 3);
  CHECK(lua::claim_record_text(*p) == "p:12:3");
  auto d = lua::parse_claim_record(str("12:3"));
  REQUIRE(d);
  CHECK_FALSE(d->unpublished);
  CHECK(lua::claim_record_text(*d) == "12:3");
  CHECK_FALSE(lua::parse_claim_record(str("p:12")));
  CHECK_FALSE(lua::parse_claim_record(str("p:x:1")));
  CHECK_FALSE(lua::parse_claim_record(str("p::1")));
}

TEST_CASE("claim record: garbage is refused") {
  for (const char* bad :
       {"", "abc", "1a", "-1", "1:", ":1", "1:x", "l:", "l:w", "l:w:1", "l::1:1", "l:w:x:1",
        "l:w:1:x", "r:", "r:x", "x:", "x:y:z", "12345678901234567890", "1:2:3"}) {
    CAPTURE(bad);
    CHECK_FALSE(lua::parse_claim_record(str(bad)));
  }
  CHECK_FALSE(lua::parse_claim_record(integer(5)));
  CHECK_FALSE(lua::parse_claim_record(array({})));
  CHECK_FALSE(lua::parse_claim_record(redis::reply::make_error("ERR x")));
}

TEST_CASE(
    "claim_record_reads: one MGET per chunk on a single Redis, one GET per key on a cluster") {
  const std::vector<lua::record_ref> keys{{"a", {}}, {"b", {}}, {"c", {}}, {"d", {}}, {"e", {}}};
  auto single = lua::claim_record_reads(keys, false, 2);
  CHECK(single ==
        std::vector<redis::command>{{"MGET", "a", "b"}, {"MGET", "c", "d"}, {"MGET", "e"}});
  CHECK(lua::claim_record_reads(keys, false) ==
        std::vector<redis::command>{{"MGET", "a", "b", "c", "d", "e"}});
  auto cluster = lua::claim_record_reads(keys, true, 2);
  CHECK(cluster == std::vector<redis::command>{
                       {"GET", "a"}, {"GET", "b"}, {"GET", "c"}, {"GET", "d"}, {"GET", "e"}});
  CHECK(lua::claim_record_reads({}, false).empty());
}

TEST_CASE("claim_record_ref: a field of the id's bucket, in the user's shard") {
  keys k("ns");
  // id = seq * 4096 + source; a bucket holds one source's seq div 128: id div 524288.
  CHECK(k.claim_bucket("alice", "4096") == "ns:{bus:0}:c:0:0");
  CHECK(k.claim_bucket("alice", "69633") == "ns:{bus:0}:c:1:0");  // seq 17 of source 1
  CHECK(k.claim_bucket("alice", std::to_string(127LL * 4096 + 16)) == "ns:{bus:0}:c:16:0");
  CHECK(k.claim_bucket("alice", std::to_string(128LL * 4096 + 16)) == "ns:{bus:0}:c:16:1");
  CHECK(k.claim_bucket("alice", "9007199254740991") ==
        "ns:{bus:0}:c:4095:17179869183");  // 2^53 - 1
  CHECK(k.claim_bucket("alice", "x1") == "ns:{bus:0}:c:0:0");
  auto m = parse_bus_message(
      R"({"id":"69633","user":"alice","src":"bus:1","kind":"message","data":1,"ts":17})");
  REQUIRE(m);
  auto b = lua::claim_record_ref(k, *m);
  CHECK(b == lua::record_ref{"ns:{bus:0}:c:1:0", "69633.9cd66c45cbfd"});
  CHECK(lua::record_read(b) == redis::command{"HGET", "ns:{bus:0}:c:1:0", "69633.9cd66c45cbfd"});
  keys sharded("ns", 16);
  auto tag = sharded.bus_tag(keys::shard_of("alice", 16));
  CHECK(lua::claim_record_ref(sharded, *m) ==
        lua::record_ref{"ns:{" + tag + "}:c:1:0", "69633.9cd66c45cbfd"});
}

TEST_CASE("record_field: the id and a digest of the user and the frame, not of its time") {
  const std::string tail = R"(,"kind":"message","data":1)";
  // SHA-256 of "alice\n" + tail, its first 12 hex digits.
  CHECK(lua::record_field("alice", "69633", tail + R"(,"ts":17})") == "69633.9cd66c45cbfd");
  // The publish time is not part of it: a replay, published again later, names the same.
  CHECK(lua::record_field("alice", "69633", tail + R"(,"ts":1796222912149})") ==
        "69633.9cd66c45cbfd");
  // Another user, another frame: another record (an id reused after a rollback).
  CHECK(lua::record_field("bob", "69633", tail + R"(,"ts":17})") == "69633.dc6bc6405fde");
  CHECK(lua::record_field("alice", "69633", R"(,"kind":"message","data":2,"ts":17})") ==
        "69633.ef0f2754beec");
  // A tail whose end is not a publish time is taken whole.
  CHECK(lua::record_field("alice", "1", tail + R"(,"ts":"x"})") !=
        lua::record_field("alice", "1", tail + R"(,"ts":17})"));
}

TEST_CASE("claim_record_reads: one HMGET per run of one bucket, MGET for the string keys") {
  const std::vector<lua::record_ref> refs{{"b1", "1"}, {"b1", "2"}, {"b1", "3"}, {"b2", "4"},
                                          {"k1", ""},  {"k2", ""},  {"b2", "5"}};
  CHECK(lua::claim_record_reads(refs, false, 2) ==
        std::vector<redis::command>{{"HMGET", "b1", "1", "2"},
                                    {"HMGET", "b1", "3"},
                                    {"HMGET", "b2", "4"},
                                    {"MGET", "k1", "k2"},
                                    {"HMGET", "b2", "5"}});
  CHECK(lua::claim_record_reads(refs, true) ==
        std::vector<redis::command>{{"HMGET", "b1", "1", "2", "3"},
                                    {"HMGET", "b2", "4"},
                                    {"GET", "k1"},
                                    {"GET", "k2"},
                                    {"HMGET", "b2", "5"}});
  // Values come back per ref, in order; a failed HMGET leaves its fields unknown.
  auto reads = lua::claim_record_reads(refs, false, 2);
  std::vector<std::optional<redis::reply>> replies{
      array({str("7"), redis::reply{}}), std::nullopt, array({str("x:1:bad")}),
      array({redis::reply{}, str("r:1")}), array({str("9")})};
  auto records = records_of(reads, replies);
  REQUIRE(records.size() == 7);
  CHECK(records[0]->offset == 7);
  CHECK(records[1]->state == kind::none);
  CHECK_FALSE(records[2]);
  CHECK(records[3]->state == kind::dead);
  CHECK(records[4]->state == kind::none);
  CHECK(records[5]->state == kind::released);
  CHECK(records[6]->offset == 9);
}

TEST_CASE("read_values + parse_claim_record: a record per key, in order; failed reads unknown") {
  const std::vector<lua::record_ref> keys{{"a", {}}, {"b", {}}, {"c", {}}, {"d", {}}, {"e", {}}};
  auto reads = lua::claim_record_reads(keys, false, 2);
  std::vector<std::optional<redis::reply>> replies{
      array({str("7"), redis::reply{}}),  // delivered at 7; no record (nil)
      std::nullopt,                       // the MGET failed: c and d unknown
      array({str("x:3:bad")})};
  auto records = records_of(reads, replies);
  REQUIRE(records.size() == 5);
  REQUIRE(records[0]);
  CHECK(records[0]->state == kind::delivered);
  CHECK(records[0]->offset == 7);
  REQUIRE(records[1]);
  CHECK(records[1]->state == kind::none);
  CHECK_FALSE(records[2]);
  CHECK_FALSE(records[3]);
  REQUIRE(records[4]);
  CHECK(records[4]->state == kind::dead);

  // A reply of the wrong shape (an array of another length, an error) reads as unknown.
  std::vector<std::optional<redis::reply>> short_reply{array({str("1")}), integer(1),
                                                       redis::reply::make_error("ERR x")};
  auto bad = records_of(reads, short_reply);
  REQUIRE(bad.size() == 5);
  for (const auto& r : bad) CHECK_FALSE(r);

  // GETs on a cluster: one value each; fewer replies than reads leave the rest unknown.
  auto gets = lua::claim_record_reads(keys, true);
  std::vector<std::optional<redis::reply>> two{str("l:w1:99:1"), redis::reply{}};
  auto got = records_of(gets, two);
  REQUIRE(got.size() == 5);
  REQUIRE(got[0]);
  CHECK(got[0]->state == kind::leased);
  REQUIRE(got[1]);
  CHECK(got[1]->state == kind::none);
  CHECK_FALSE(got[2]);
}

TEST_CASE("parse_claim_reply: two items per message, every state") {
  auto r = array({str("delivered"), integer(7), str("done"), integer(3), str("taken"), integer(0),
                  str("dead"), integer(0), str("won"), integer(4), str("failed"),
                  str("WRONGTYPE Operation against a key holding the wrong kind of value"),
                  str("expired"), integer(0)});
  auto p = lua::parse_claim_reply(r, 7);
  REQUIRE(p);
  REQUIRE(p->size() == 7);
  CHECK((*p)[0].state == lua::claim_state::delivered);
  CHECK((*p)[0].number == 7);
  CHECK((*p)[1].state == lua::claim_state::done);
  CHECK((*p)[1].number == 3);
  CHECK((*p)[2].state == lua::claim_state::taken);
  CHECK((*p)[3].state == lua::claim_state::dead);
  CHECK((*p)[4].state == lua::claim_state::won);
  CHECK((*p)[4].number == 4);
  CHECK((*p)[5].state == lua::claim_state::failed);
  CHECK((*p)[5].error.rfind("WRONGTYPE", 0) == 0);
  CHECK((*p)[6].state == lua::claim_state::expired);
  for (int s = 0; s < 7; ++s)
    CHECK(std::string(lua::to_string((*p)[s].state)) == r.elements[2 * s].str);

  // Not claim.lua's reply: wrong count, unknown word, not an array, an error.
  CHECK_FALSE(lua::parse_claim_reply(r, 6));
  CHECK_FALSE(lua::parse_claim_reply(array({str("delivered")}), 1));
  CHECK_FALSE(lua::parse_claim_reply(array({str("maybe"), integer(1)}), 1));
  CHECK_FALSE(lua::parse_claim_reply(integer(1), 1));
  CHECK_FALSE(lua::parse_claim_reply(redis::reply::make_error("bad_request x"), 1));
  auto empty = lua::parse_claim_reply(array({}), 0);
  REQUIRE(empty);
  CHECK(empty->empty());
}

TEST_CASE("parse_claim_reply: unpublished is done with its frame pending; not finished") {
  auto r = array({str("unpublished"), integer(9), str("delivered"), integer(10)});
  auto p = lua::parse_claim_reply(r, 2);
  REQUIRE(p);
  CHECK((*p)[0].state == lua::claim_state::done);
  CHECK((*p)[0].number == 9);
  CHECK((*p)[0].frame_pending);
  CHECK_FALSE((*p)[1].frame_pending);
  CHECK_FALSE(lua::batch_finished(*p));
  (*p)[0].frame_pending = false;  // published
  CHECK(lua::batch_finished(*p));
}

TEST_CASE("published_for: a claim key, an id and a frame per message; p or s") {
  pushonce::keys k("ns");
  std::vector<pushonce::bus_message> batch(2);
  batch[0].id = "4096";
  batch[0].user = "ann";
  batch[0].tail = R"(,"kind":"message","data":1,"ts":5})";
  batch[1].id = "8192";
  batch[1].user = "bo";
  batch[1].tail = R"(,"kind":"message","data":2,"ts":5})";
  std::vector<std::size_t> which{1};
  std::vector<long long> offsets{7};
  auto c = lua::script_command(lua::published_for(k, false, batch, which, offsets));
  // EVALSHA sha numkeys key... arg...
  REQUIRE(c.size() == 7);
  CHECK(c[0] == "EVALSHA");
  CHECK(c[2] == "1");
  CHECK(c[3] == k.claim("bo", "8192"));
  CHECK(c[4] == "p");
  CHECK(c[5] == lua::record_field("bo", "8192", batch[1].tail));
  CHECK(c[6] == pushonce::render_frame(batch[1], 7));
  CHECK(lua::script_command(lua::published_for(k, true, batch, which, offsets))[4] == "s");
}

TEST_CASE("claim_for: the KEYS/ARGV layout of claim.lua's header") {
  keys k("ns");
  lua::claim_settings s;
  s.owner = "w1-9";
  s.lease = std::chrono::milliseconds(5000);
  s.dedup_window = std::chrono::milliseconds(120000);
  s.max_attempts = 5;
  s.inbox_maxlen = 1000;
  s.inbox_idle = std::chrono::milliseconds(604800000);
  s.epoch = "E7";
  std::vector<bus_message> batch{
      msg("4096", "alice", R"(,"kind":"message","data":1,"ts":1700000000002})", 1700000000002),
      msg("8192", "bob", R"(,"kind":"message","data":2,"ts":1700000000001})", 1700000000001)};
  auto cmd = lua::script_command(lua::claim_for(k, s, batch));
  const std::vector<std::string> expect{"EVALSHA",
                                        redis::get_script("claim").sha1,
                                        "2",
                                        "ns:{bus:0}:u:alice:c:4096",
                                        "ns:{bus:0}:u:bob:c:8192",
                                        "w1-9",
                                        "5000",
                                        "120000",
                                        "5",
                                        "1000",
                                        "604800000",
                                        "E7",
                                        "1700000000001",      // the oldest publish time
                                        "p",                  // publish mode: PUBLISH
                                        "4096.9cd66c45cbfd",  // the record's field
                                        R"(,"kind":"message","data":1,"ts":1700000000002})",
                                        lua::record_field("bob", "8192", batch[1].tail),
                                        R"(,"kind":"message","data":2,"ts":1700000000001})"};
  CHECK(cmd == expect);
  // ARGV has 9 + 2 per key, as the script checks.
  CHECK(cmd.size() - 3 - 2 == 9 + 2 * 2);

  // The publish mode (ARGV[9]): SPUBLISH on a cluster, or none (the caller publishes).
  s.publish = lua::publish_mode::sharded;
  CHECK(lua::script_command(lua::claim_for(k, s, batch))[13] == "s");
  s.publish = lua::publish_mode::none;
  CHECK(lua::script_command(lua::claim_for(k, s, batch))[13] == "n");
  s.publish = lua::publish_mode::classic;

  // lease_only: an empty tail for that message only.
  auto lo = lua::script_command(lua::claim_for(k, s, batch, {false, true}));
  CHECK(lo[15] == batch[0].tail);
  CHECK(lo[17].empty());
  auto lo1 = lua::script_command(lua::claim_for(k, s, batch, {true}));  // shorter than the batch
  CHECK(lo1[15].empty());
  CHECK(lo1[17] == batch[1].tail);

  // Messages without a publish time (ts 0) are left out of the oldest; none known: 0.
  std::vector<bus_message> unknown{msg("4096", "alice", "", 0)};
  CHECK(lua::script_command(lua::claim_for(k, s, unknown))[11] == "0");
}

TEST_CASE("release, dead_letter, session, ack: the KEYS/ARGV layout of each script's header") {
  keys k("ns");
  auto m = msg("4096", "alice", R"(,"kind":"message","data":1,"ts":1})");
  CHECK(lua::script_command(lua::release_for(k, m, "w1-3")) ==
        std::vector<std::string>{"EVALSHA", redis::get_script("release").sha1, "1",
                                 "ns:{bus:0}:c:0:0", "w1-3", "4096.9cd66c45cbfd"});
  // A cluster: the dead-letter stream is in another slot; the caller adds the entry (the
  // entry's arguments go empty: dead_letter.lua reads them only with the stream).
  CHECK(lua::script_command(lua::dead_letter_for(k, true, m, "w1-3", "poison",
                                                 std::chrono::milliseconds(120000))) ==
        std::vector<std::string>{"EVALSHA", redis::get_script("dead_letter").sha1, "1",
                                 "ns:{bus:0}:c:0:0", "w1-3", "poison", "120000",
                                 "4096.9cd66c45cbfd", "", "", "", "", "", ""});
  // A single Redis: the dead-letter stream and the entry's fields come too.
  CHECK(lua::script_command(lua::dead_letter_for(k, false, m, "w1-3", "poison",
                                                 std::chrono::milliseconds(120000), 5)) ==
        std::vector<std::string>{"EVALSHA", redis::get_script("dead_letter").sha1, "2",
                                 "ns:{bus:0}:c:0:0", "ns:dead-letters", "w1-3", "poison", "120000",
                                 "4096.9cd66c45cbfd", "10000", "4096", "alice", m.src, "5", m.raw});
  CHECK(lua::script_command(lua::session_for(k, "alice", "E1", std::nullopt)) ==
        std::vector<std::string>{"EVALSHA", redis::get_script("session").sha1, "1",
                                 "ns:{bus:0}:u:alice:meta", "E1"});
  CHECK(lua::script_command(lua::session_for(k, "alice", "E1", std::chrono::milliseconds(600000)))
            .back() == "600000");
  // the client's since: ARGV[3..4] (an empty idle ttl keeps the places), ARGV[5] 'r'
  CHECK(lua::script_command(
            lua::session_for(k, "alice", "E2", std::nullopt, lua::session_since{"E1", 7})) ==
        std::vector<std::string>{"EVALSHA", redis::get_script("session").sha1, "1",
                                 "ns:{bus:0}:u:alice:meta", "E2", "", "E1", "7"});
  CHECK(lua::script_command(lua::session_for(k, "alice", "E2", std::chrono::milliseconds(5),
                                             lua::session_since{"E1", 7, true})) ==
        std::vector<std::string>{"EVALSHA", redis::get_script("session").sha1, "1",
                                 "ns:{bus:0}:u:alice:meta", "E2", "5", "E1", "7", "r"});
  CHECK(lua::script_command(lua::ack_for(k, "alice", 12, std::nullopt)) ==
        std::vector<std::string>{"EVALSHA", redis::get_script("ack").sha1, "1",
                                 "ns:{bus:0}:u:alice:meta", "12"});
  CHECK(lua::script_command(lua::ack_for(k, "alice", 12, std::string("E1"))).back() == "E1");
}

}  // namespace test_claim_record_unit
