#include "core/queue_settings.hpp"
// (the header under test first: it is self-contained)

#include <doctest/doctest.h>

#include <boost/json.hpp>

#include "core/lua/settings.hpp"
#include "core/redis/scripts.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_queue_settings_unit {

using namespace pushonce;
namespace json = boost::json;

TEST_CASE("queue settings: defaults for an empty hash, and the settings object") {
  auto s = parse_queue_settings({});
  CHECK(s.state == queue_settings::state_kind::open);
  CHECK_FALSE(s.paused);
  CHECK_FALSE(s.opens_at);
  CHECK(s.max_waiting == 0);
  CHECK(s.abandon_after_s == 300);
  CHECK_FALSE(s.accept_timeout_s);
  auto o = render_queue_settings("q", s, 30000);
  CHECK(json::serialize(o) ==
        R"({"queue":"q","state":"open","paused":false,"opens_at":null,"shuffle":false,)"
        R"("max_waiting":null,"abandon_after_s":300,"accept_timeout_s":30,"join_pow_bits":0,)"
        R"("rate_per_min":0,"burst":0,"passes":true,"max_active":0,"session_s":0,)"
        R"("session_renewal":true})");
  CHECK(render_queue_settings("q", s, 1500).at("accept_timeout_s").as_double() == 1.5);
}

TEST_CASE("queue settings: every field parsed; bad values keep their defaults") {
  auto s = parse_queue_settings({{"state", "prequeue"},
                                 {"paused", "1"},
                                 {"opens_at", "1700000000000"},
                                 {"shuffle", "1"},
                                 {"max_waiting", "500"},
                                 {"abandon_after_s", "0"},
                                 {"accept_timeout_s", "60"},
                                 {"join_pow_bits", "20"},
                                 {"unknown", "x"}});
  CHECK(s.state == queue_settings::state_kind::prequeue);
  CHECK(s.paused);
  CHECK(s.opens_at == 1700000000000);
  CHECK(s.shuffle);
  CHECK(s.max_waiting == 500);
  CHECK(s.abandon_after_s == 0);
  CHECK(s.accept_timeout_s == 60);
  CHECK(s.join_pow_bits == 20);
  auto o = render_queue_settings("q", s, 0);
  CHECK(o.at("state") == "prequeue");
  CHECK(o.at("opens_at") == 1700000000000);
  CHECK(o.at("max_waiting") == 500);
  CHECK(o.at("accept_timeout_s") == 60);

  auto bad = parse_queue_settings(
      {{"state", "weird"}, {"max_waiting", "-3"}, {"abandon_after_s", "x"}, {"opens_at", "5"}});
  CHECK(bad.state == queue_settings::state_kind::open);
  CHECK(bad.max_waiting == 0);
  CHECK(bad.abandon_after_s == 300);
  CHECK_FALSE(bad.opens_at);  // only with state prequeue
  CHECK(parse_queue_settings({{"state", "closed"}}).state == queue_settings::state_kind::closed);
}

TEST_CASE("queue settings: the registered value carries the leaders' accept timeout") {
  CHECK(registered_value(30000) == "accept_timeout_ms:30000");
  CHECK(registered_accept_timeout_ms("accept_timeout_ms:30000") == 30000);
  CHECK(registered_accept_timeout_ms("1") == 0);
  CHECK(registered_accept_timeout_ms("") == 0);
}

TEST_CASE("queue settings: CLI values are checked and become fields") {
  settings_values v;
  CHECK_FALSE(settings_problem(v));
  CHECK(settings_fields(v).empty());
  v.max_waiting = 0;
  v.abandon_after_s = 120;
  v.accept_timeout_s = 30;
  CHECK_FALSE(settings_problem(v));
  CHECK(settings_fields(v) == settings_change{{"max_waiting", "0"},
                                              {"abandon_after_s", "120"},
                                              {"accept_timeout_s", "30"}});
  auto one = [](std::optional<long long> settings_values::*field, long long value) {
    settings_values v;
    v.*field = value;
    return v;
  };
  CHECK(settings_problem(one(&settings_values::max_waiting, -1)));
  CHECK(settings_problem(one(&settings_values::abandon_after_s, 2'000'000'000)));
  CHECK(settings_problem(one(&settings_values::accept_timeout_s, -5)));
  CHECK(settings_problem(one(&settings_values::rate_per_min, 60'001)));
  CHECK_FALSE(settings_problem(one(&settings_values::rate_per_min, 60'000)));
  CHECK(settings_problem(one(&settings_values::max_active, -1)));
  CHECK(settings_problem(one(&settings_values::session_s, 86'401)));
  CHECK_FALSE(settings_problem(one(&settings_values::session_s, 86'400)));
  CHECK(settings_problem(one(&settings_values::burst, -1)));
  CHECK_FALSE(settings_problem(one(&settings_values::rate_per_min, 600)));
  settings_values cap;
  cap.rate_per_min = 600;
  cap.passes = false;
  cap.max_active = 500;
  cap.session_s = 900;
  cap.session_renewal = true;
  CHECK(settings_fields(cap) == settings_change{{"rate_per_min", "600"},
                                                {"passes", "0"},
                                                {"max_active", "500"},
                                                {"session_s", "900"},
                                                {"session_renewal", "1"}});
  settings_values pow;
  pow.join_pow_bits = 16;
  CHECK_FALSE(settings_problem(pow));
  CHECK(settings_fields(pow) == settings_change{{"join_pow_bits", "16"}});
  pow.join_pow_bits = 33;
  CHECK(settings_problem(pow));
}

TEST_CASE("queue settings: opening times in RFC 3339 or ms since the epoch") {
  CHECK(parse_open_time("1700000000000") == 1700000000000);
  CHECK(parse_open_time("1970-01-01T00:00:00Z") == 0);
  CHECK(parse_open_time("2023-11-14T22:13:20Z") == 1700000000000);
  CHECK(parse_open_time("2023-11-14T22:13:20.5Z") == 1700000000500);
  CHECK(parse_open_time("2023-11-14T22:13:20.123456Z") == 1700000000123);
  CHECK(parse_open_time("2023-11-14T23:13:20+01:00") == 1700000000000);
  CHECK(parse_open_time("2023-11-14T21:13:20-01:00") == 1700000000000);
  CHECK(parse_open_time("2024-02-29T00:00:00Z") == 1709164800000);
  for (auto bad : {"", "soon", "2023-11-14", "2023-11-14T22:13:20", "2023-13-01T00:00:00Z",
                   "2023-11-14T22:13:20.Z", "2023-11-14T22:13:20Zx", "-5", "12a",
                   "2023-11-14T22:13:20+0100", "9999999999999999"})
    CHECK_MESSAGE(!parse_open_time(bad), bad);
}

TEST_CASE("settings.lua: the KEYS/ARGV layout of its header, and its reply") {
  keys k("ns");
  lua::settings_call c;
  c.queue = "q";
  c.op = lua::settings_op::set;
  c.fields = {{"max_waiting", "10"}};
  const auto& script = redis::get_script("settings");
  CHECK(lua::script_command(lua::settings_for(k, c)) ==
        redis::command{"EVALSHA", script.sha1, "4", "ns:{q:q}:settings", "ns:{q:q}:registered",
                       "ns:{q:q}:prequeue", "ns:{q:q}:assigned", "q", "ns:leader:wake", "set", "",
                       "0", "max_waiting", "10"});
  c = {};
  c.queue = "q";
  c.op = lua::settings_op::open;
  c.opens_at = 1700000000000;
  c.shuffle = true;
  CHECK(lua::script_command(lua::settings_for(k, c)) ==
        redis::command{"EVALSHA", script.sha1, "4", "ns:{q:q}:settings", "ns:{q:q}:registered",
                       "ns:{q:q}:prequeue", "ns:{q:q}:assigned", "q", "ns:leader:wake", "open",
                       "1700000000000", "1"});
  // The script names its inputs in the same order.
  const auto& t = script.text;
  auto at = [&](const char* line) { return t.find(line); };
  CHECK(at("local settings = KEYS[1]") < at("local registered = KEYS[2]"));
  CHECK(at("local registered = KEYS[2]") < at("local prequeue = KEYS[3]"));
  CHECK(at("local queue = ARGV[1]") < at("local shuffle = ARGV[5]"));
  CHECK(at("local wake = ARGV[2]") != std::string::npos);
  CHECK(at("local what = ARGV[3]") != std::string::npos);
  CHECK(at("local at = ARGV[4]") != std::string::npos);

  redis::reply r;
  r.kind = redis::reply::type::array;
  auto str = [](std::string s) {
    redis::reply e;
    e.kind = redis::reply::type::string;
    e.str = std::move(s);
    return e;
  };
  redis::reply n;
  n.kind = redis::reply::type::integer;
  n.integer = 7;
  r.elements = {
      str("accept_timeout_ms:5000"), n, str("state"), str("closed"), str("paused"), str("1")};
  auto p = lua::parse_settings_reply(r);
  REQUIRE(p);
  CHECK(p->default_accept_timeout_ms == 5000);
  CHECK(p->prequeue_length == 7);
  CHECK(p->settings.state == queue_settings::state_kind::closed);
  CHECK(p->settings.paused);
  r.elements.pop_back();
  CHECK_FALSE(lua::parse_settings_reply(r));
}

}  // namespace test_queue_settings_unit
