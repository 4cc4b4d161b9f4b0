#include "leader/abandon_plan.hpp"
// (the header under test comes first)

#include <doctest/doctest.h>

#include <regex>

#include "core/redis/scripts.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_abandon_plan_unit {

using pushonce::leader::abandon_after_of;
using pushonce::leader::abandon_plan;
using pushonce::leader::dead_instances;
using pushonce::leader::gateway_instance;
using pushonce::lua::absent_user;
using ms = std::chrono::milliseconds;
using range = abandon_plan::range;

namespace {

std::vector<absent_user> users_at(std::initializer_list<std::pair<const char*, long long>> l) {
  std::vector<absent_user> out;
  for (auto& [u, s] : l) out.push_back({u, s});
  return out;
}

// The names a script gives its KEYS, in order ("local count = KEYS[1]" ...).
std::vector<std::string> key_names(const std::string& script) {
  std::vector<std::string> out;
  std::regex line(R"(local (\w+) = KEYS\[(\d+)\])");
  const auto& text = pushonce::redis::get_script(script).text;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), line); it != std::sregex_iterator();
       ++it) {
    CHECK(std::stoul((*it)[2]) == out.size() + 1);
    out.push_back((*it)[1]);
  }
  return out;
}

// The keys of an EVALSHA command: EVALSHA sha numkeys k1 k2 ...
std::vector<std::string> command_keys(const pushonce::redis::command& c) {
  auto n = std::stoul(c.at(2));
  return {c.begin() + 3, c.begin() + 3 + static_cast<std::ptrdiff_t>(n)};
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

TEST_CASE("abandon_plan: abandon_after_s: absent is 300 s, 0 is never, junk is the default") {
  CHECK(abandon_after_of(std::nullopt) == ms{300'000});
  CHECK(abandon_after_of(std::string("")) == ms{300'000});
  CHECK(abandon_after_of(std::string("5")) == ms{5'000});
  CHECK_FALSE(abandon_after_of(std::string("0")).has_value());
  CHECK(abandon_after_of(std::string("-3")) == ms{300'000});
  CHECK(abandon_after_of(std::string("12x")) == ms{300'000});
}

TEST_CASE("abandon_plan: reads from the oldest absence to now minus abandon_after") {
  abandon_plan p(3);
  auto r = p.next_range("q", ms{5000}, 100'000);
  REQUIRE(r);
  CHECK(*r == range{"-inf", "95000", 3});
  // Fewer than the batch: everything up to 95000 is dealt with.
  auto users = p.on_read("q", *r, users_at({{"a", 1000}, {"b", 94'000}}));
  CHECK(users == std::vector<std::string>{"a", "b"});
  CHECK_FALSE(p.more("q"));
  // Next tick: from just after 95000.
  auto r2 = p.next_range("q", ms{5000}, 101'000);
  REQUIRE(r2);
  CHECK(*r2 == range{"(95000", "96000", 3});
  // Nothing new within the same ms: nothing to read.
  p.on_read("q", *r2, {});
  CHECK_FALSE(p.next_range("q", ms{5000}, 101'000).has_value());
}

TEST_CASE("abandon_plan: a full batch goes on from its last score, users there read again") {
  abandon_plan p(3);
  auto r = p.next_range("q", ms{1000}, 10'000);
  auto users = p.on_read("q", *r, users_at({{"a", 1}, {"b", 2}, {"c", 2}}));
  CHECK(users.size() == 3);
  CHECK(p.more("q"));
  auto r2 = p.next_range("q", ms{1000}, 10'000);
  REQUIRE(r2);
  CHECK(*r2 == range{"2", "9000", 3});  // inclusive: "c"'s peers at 2 may follow
  auto users2 = p.on_read("q", *r2, users_at({{"b", 2}, {"c", 2}, {"d", 3}}));
  CHECK(users2.size() == 3);  // b and c again: abandon.lua leaves them alone
}

TEST_CASE("abandon_plan: a batch that is one ms whole is read as a group, never stuck") {
  abandon_plan p(2);
  auto r = p.next_range("q", ms{1000}, 10'000);
  p.on_read("q", *r, users_at({{"a", 7}, {"b", 7}}));
  auto g = p.next_range("q", ms{1000}, 10'000);
  REQUIRE(g);
  CHECK(*g == range{"7", "7", 0});
  auto users = p.on_read("q", *g, users_at({{"a", 7}, {"b", 7}, {"c", 7}, {"d", 7}}));
  CHECK(users.size() == 4);
  CHECK(p.more("q"));
  auto after = p.next_range("q", ms{1000}, 10'000);
  REQUIRE(after);
  CHECK(*after == range{"(7", "9000", 2});
}

TEST_CASE("abandon_plan: never (0) reads nothing and does not hold the drop horizon back") {
  abandon_plan p;
  CHECK_FALSE(p.next_range("never", std::nullopt, 50'000).has_value());
  std::map<std::string, std::optional<ms>> qs{{"never", std::nullopt}};
  // With no queue abandoning, absences older than the default are forgotten.
  CHECK(p.drop_horizon(qs, 1'000'000) == 1'000'000 - 300'000);
}

TEST_CASE("abandon_plan: the drop horizon is the least advanced queue's cursor") {
  abandon_plan p(10);
  std::map<std::string, std::optional<ms>> qs{{"a", ms{1000}}, {"b", ms{5000}}};
  CHECK_FALSE(p.drop_horizon(qs, 10'000).has_value());  // b not read yet
  p.on_read("a", *p.next_range("a", ms{1000}, 10'000), {});
  p.on_read("b", *p.next_range("b", ms{5000}, 10'000), {});
  // a dealt with everything <= 9000, b everything <= 5000: forget what began before 5001.
  CHECK(p.drop_horizon(qs, 10'000) == 5001);
  // A full batch at an inclusive cursor keeps users at that score.
  abandon_plan f(2);
  std::map<std::string, std::optional<ms>> one{{"a", ms{1000}}};
  f.on_read("a", *f.next_range("a", ms{1000}, 10'000), users_at({{"x", 3}, {"y", 4}}));
  CHECK(f.drop_horizon(one, 10'000) == 4);
  // A leadership lost: start over.
  f.reset();
  CHECK_FALSE(f.drop_horizon(one, 10'000).has_value());
}

TEST_CASE("abandon_plan: dead gateway instances: lapsed or replaced heartbeat, after the grace") {
  std::vector<gateway_instance> all{
      {"g1~aaa", 1000, std::string("g1~aaa")},  // alive
      {"g2~bbb", 1000, std::nullopt},           // heartbeat lapsed
      {"g3~old", 1000, std::string("g3~new")},  // restarted under the same id
      {"g4~ccc", 9000, std::nullopt},           // registered just now: may not have beaten yet
  };
  auto dead = dead_instances(all, 10'000, ms{5000});
  CHECK(dead == std::vector<std::string>{"g2~bbb", "g3~old"});
  CHECK(pushonce::lua::gateway_of_instance("host-1-ab~f00") == "host-1-ab");
  CHECK(pushonce::lua::gateway_of_instance("a~b~c") == "a~b");
  CHECK(pushonce::lua::gateway_of_instance("nohost") == "");
  CHECK(pushonce::lua::presence_instance("gw", "12") == "gw~12");
}

TEST_CASE("presence scripts: each names its KEYS in the builder's order") {
  pushonce::keys k("t");
  auto open =
      command_keys(pushonce::lua::script_command(pushonce::lua::presence_open_for(k, "u", "g~1")));
  CHECK(key_names("presence_open") ==
        std::vector<std::string>{"count", "gateway", "gateways", "absent"});
  CHECK(open == std::vector<std::string>{"t:{presence}:count", "t:{presence}:gw:g~1",
                                         "t:{presence}:gws", "t:{presence}:absent"});
  auto close =
      command_keys(pushonce::lua::script_command(pushonce::lua::presence_close_for(k, "u", "g~1")));
  CHECK(key_names("presence_close") == std::vector<std::string>{"count", "gateway", "absent"});
  CHECK(close == std::vector<std::string>{"t:{presence}:count", "t:{presence}:gw:g~1",
                                          "t:{presence}:absent"});
  CHECK(key_names("presence_joined") == std::vector<std::string>{"count", "absent"});
  CHECK(command_keys(pushonce::lua::script_command(pushonce::lua::presence_joined_for(k, "u"))) ==
        std::vector<std::string>{"t:{presence}:count", "t:{presence}:absent"});
  CHECK(key_names("presence_fold") ==
        std::vector<std::string>{"count", "gateway", "gateways", "absent"});
  CHECK(command_keys(pushonce::lua::script_command(
            pushonce::lua::presence_fold_for(k, "g~1", "0", 10))) == open);
  CHECK(key_names("presence_drop") == std::vector<std::string>{"absent"});
  CHECK(key_names("presence_reclaim") ==
        std::vector<std::string>{"count", "gateway", "gateways", "absent"});
  std::vector<std::pair<std::string, std::size_t>> held{{"u", 2}};
  auto reclaim = pushonce::lua::script_command(pushonce::lua::presence_reclaim_for(k, "g~1", held));
  CHECK(command_keys(reclaim) == open);
  CHECK(std::vector<std::string>(reclaim.end() - 3, reclaim.end()) ==
        std::vector<std::string>{"g~1", "u", "2"});
  auto ab =
      command_keys(pushonce::lua::script_command(pushonce::lua::abandon_for(k, "q", 3, {"u"})));
  CHECK(key_names("abandon") == std::vector<std::string>{"waiting", "events", "pending", "stats",
                                                         "fence", "prequeue", "draw"});
  REQUIRE(ab.size() == 7);
  CHECK(ends_with(ab[0], ":waiting"));
  CHECK(ends_with(ab[1], ":events"));
  CHECK(ends_with(ab[2], ":pending"));
  CHECK(ends_with(ab[3], ":stats"));
  CHECK(ends_with(ab[4], ":fence"));
  CHECK(ends_with(ab[5], ":prequeue"));
  CHECK(ends_with(ab[6], ":prequeue:draw"));
}

TEST_CASE("presence replies: absent range, fold and abandon parse; junk is refused") {
  using pushonce::redis::reply;
  auto str = [](std::string s) {
    reply r;
    r.kind = reply::type::string;
    r.str = std::move(s);
    return r;
  };
  auto integer = [](long long v) {
    reply r;
    r.kind = reply::type::integer;
    r.integer = v;
    return r;
  };
  reply arr;
  arr.kind = reply::type::array;
  arr.elements = {str("a"), str("1700000000000"), str("b"), str("1700000000001")};
  auto got = pushonce::lua::parse_absent_range(arr);
  REQUIRE(got);
  CHECK(*got == std::vector<absent_user>{{"a", 1700000000000}, {"b", 1700000000001}});
  arr.elements.pop_back();
  CHECK_FALSE(pushonce::lua::parse_absent_range(arr).has_value());
  reply fold;
  fold.kind = reply::type::array;
  fold.elements = {str("17"), integer(3), integer(0)};
  auto f = pushonce::lua::parse_fold_reply(fold);
  REQUIRE(f);
  CHECK(f->cursor == "17");
  CHECK(f->folded == 3);
  CHECK_FALSE(f->done);
  reply ab;
  ab.kind = reply::type::array;
  ab.elements = {integer(2), integer(1)};
  auto a = pushonce::lua::parse_abandon_reply(ab);
  REQUIRE(a);
  CHECK(a->removed == 2);
  CHECK(a->ended == 1);
  CHECK_FALSE(pushonce::lua::parse_abandon_reply(str("x")).has_value());
}

}  // namespace test_abandon_plan_unit
