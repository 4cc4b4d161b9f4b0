// Chaos (docs/protocol.md "Guarantees", no silent gap): live sessions whose catch-ups meet
// trimmed inboxes, under load. Workers keep each inbox at about 8 entries
// (--inbox-maxlen 8, stream-node-max-entries 2) while 20 users get ~30 messages/s each.
// Every second the gateway's Pub/Sub link is cut (CLIENT KILL) while its Redis ACL user may
// not subscribe, and subscribing is allowed again 400 ms later: the gateway retries the
// refused SUBSCRIBEs, then every session catches up, and most find the offsets they missed
// trimmed away. Each session keeps {epoch, last offset} and resumes on any close. At the
// end: no session ever received an offset that was not the next one, except the first
// frame after a welcome that said recovered:false (a loss owned up to); no offset twice;
// each session reached its user's latest offset; and the gateway did close sessions for
// gaps (the case was exercised).
//
// PUSHONCE_CHAOS_SECONDS (default 15) sets how long the load runs.

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <atomic>
#include <boost/json.hpp>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tests/chaos/chaos_common.hpp"
#include "tests/support/deployment.hpp"
#include "tests/support/sync_redis.hpp"
#include "tests/support/wait.hpp"
#include "tests/support/ws_client.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_chaos_catch_up_gaps {

using namespace pushonce::test;
using pushonce::test::chaos::env_or;
using namespace std::chrono_literals;
namespace json = boost::json;

namespace {

constexpr const char* gap_api_key = "chaos-gap-key";
constexpr int gap_users = 20;

struct gap_session {
  std::string user;
  std::string epoch;
  std::atomic<long long> last{0};
  long long silent_gaps = 0, duplicates = 0, announced_losses = 0, closes_1013 = 0, connects = 0,
            frames = 0;
  std::vector<std::string> problems;
  void note(std::string p) {
    if (problems.size() < 5) problems.push_back(std::move(p));
  }
};

void run_gap_session(gap_session& s, std::uint16_t port, const std::atomic<bool>& stop) {
  while (!stop) {
    ws_client ws;
    try {
      ws.connect("127.0.0.1", port, "/ws", {}, 2s);
    } catch (const std::exception&) {
      pace(50ms, "a reconnect after a refused connect");
      continue;
    }
    auto hello = s.epoch.empty() ? hello_frame(s.user) : hello_frame(s.user, s.epoch, s.last);
    if (!ws.send(hello, 2s)) continue;
    auto w = ws.receive(8s);
    if (!w) {
      pace(50ms, "a reconnect after a hello without an answer");
      continue;
    }
    auto wo = json::parse(*w).as_object();
    if (str_field(wo, "type") != "welcome") {
      s.note("first frame: " + *w);
      continue;
    }
    bool may_jump = !wo.at("recovered").as_bool() || str_field(wo, "epoch") != s.epoch;
    if (s.epoch.empty()) {
      s.epoch = str_field(wo, "epoch");
      may_jump = true;  // a first session starts after the acked offset (0): whatever is there
    }
    ++s.connects;
    while (!stop) {
      auto f = ws.receive(200ms);
      if (!f) {
        if (ws.closed()) break;
        continue;
      }
      auto fo = json::parse(*f).as_object();
      if (str_field(fo, "type") != "message") continue;
      long long off = int_field(fo, "offset");
      long long last = s.last;
      ++s.frames;
      if (off <= last) {
        ++s.duplicates;
        s.note(fmt::format("offset {} after {}", off, last));
      } else if (off != last + 1) {
        if (may_jump) {
          ++s.announced_losses;
        } else {
          ++s.silent_gaps;
          s.note(fmt::format("offset {} after {} without recovered:false", off, last));
        }
      }
      may_jump = false;
      if (off > last) s.last = off;
    }
    if (ws.close_code() == 1013) ++s.closes_1013;
  }
}

// The id of the gateway's Pub/Sub connection ("" when none).
std::string gateway_subscriber(sync_redis& r, const std::string& name) {
  auto list = r.text({"CLIENT", "LIST"});
  for (std::size_t pos = 0; pos < list.size();) {
    auto eol = list.find('\n', pos);
    auto line = list.substr(pos, eol == std::string::npos ? std::string::npos : eol - pos);
    pos = eol == std::string::npos ? list.size() : eol + 1;
    auto sub = line.find(" sub=");
    if (line.find(" name=" + name + " ") == std::string::npos || sub == std::string::npos ||
        std::atoi(line.c_str() + sub + 5) < 1 || line.rfind("id=", 0) != 0)
      continue;
    return line.substr(3, line.find(' ') - 3);
  }
  return {};
}

}  // namespace

TEST_CASE(
    "chaos: catch-ups that meet trimmed inboxes under load close and resume; never a silent "
    "gap") {
  const auto seconds = std::chrono::seconds(env_or("PUSHONCE_CHAOS_SECONDS", 15));
  deployment d("chaos", "gaps", {{"PUSHONCE_API_KEY", gap_api_key}});
  d.redis().cmd({"CONFIG", "SET", "stream-node-max-entries", "2"});
  d.start_leader();
  d.start_worker({"--inbox-maxlen", "8"});
  d.start_worker({"--inbox-maxlen", "8"});
  // The gateway alone logs in as an ACL user whose right to subscribe the test toggles.
  d.redis().cmd({"ACL", "SETUSER", "chaos-gw", "on", ">chaos-gw-pass", "~*", "&*", "+@all"});
  auto gw_url = d.url();
  REQUIRE(gw_url.rfind("redis://", 0) == 0);
  gw_url.insert(8, "chaos-gw:chaos-gw-pass@");
  auto& gw = d.start_gateway({"--dev-auth", "--redis", gw_url});
  const auto port = d.port_of(gw);
  REQUIRE_MESSAGE(d.wait_ready(), d.ready_failure());
  const auto name = "pushonce-gateway:" + d.id_of(gw);

  std::vector<std::unique_ptr<gap_session>> sessions;
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int i = 0; i < gap_users; ++i) {
    auto s = std::make_unique<gap_session>();
    s->user = "gap" + std::to_string(i);
    sessions.push_back(std::move(s));
  }
  for (auto& s : sessions)
    threads.emplace_back([&, p = s.get()] { run_gap_session(*p, port, stop); });
  struct joiner {
    std::atomic<bool>& stop;
    std::vector<std::thread>& threads;
    ~joiner() {
      stop = true;
      for (auto& t : threads)
        if (t.joinable()) t.join();
    }
  } join_all{stop, threads};
  REQUIRE(wait_until(
      [&] {
        for (auto& s : sessions)
          if (s->connects == 0) return false;
        return true;
      },
      20s));

  // Load: a batch with one message per user every 25 ms; every second a cut of the
  // gateway's Pub/Sub link while it may not subscribe, for 400 ms.
  const headers auth{{"Authorization", std::string("Bearer ") + gap_api_key},
                     {"Content-Type", "application/json"}};
  long long batches = 0, refused = 0, cuts = 0;
  const auto start = std::chrono::steady_clock::now();
  auto next_cut = start + 500ms;
  auto allow_at = start;  // when subscribing is allowed again (with `denied`)
  bool denied = false;
  while (std::chrono::steady_clock::now() - start < seconds) {
    std::string body = R"({"messages":[)";
    for (int i = 0; i < gap_users; ++i)
      body += fmt::format(R"({}{{"user":"gap{}","data":{}}})", i ? "," : "", i, batches);
    body += "]}";
    auto r = http_request("127.0.0.1", port, "POST", "/api/publish", body, auth, 5s);
    if (r.status == 200)
      ++batches;
    else
      ++refused;
    const auto now = std::chrono::steady_clock::now();
    if (now >= next_cut) {
      next_cut += 1s;
      d.redis().cmd({"ACL", "SETUSER", "chaos-gw", "-subscribe"});
      auto id = gateway_subscriber(d.redis(), name);
      if (!id.empty() && d.redis().integer({"CLIENT", "KILL", "ID", id}) == 1) ++cuts;
      allow_at = now + 400ms;
      denied = true;
    }
    if (denied && now >= allow_at) {
      d.redis().cmd({"ACL", "SETUSER", "chaos-gw", "+subscribe"});
      denied = false;
    }
    pace(25ms, "a batch and a look at the cut schedule every 25 ms");
  }

  d.redis().cmd({"ACL", "SETUSER", "chaos-gw", "+subscribe"});
  // Quiet: every session reaches its user's latest offset.
  auto latest = [&](const std::string& user) {
    auto v = d.redis().text({"HGET", d.k().user(user, "meta"), "offset"});
    return v.empty() ? 0LL : std::stoll(v);
  };
  bool caught_up = wait_until(
      [&] {
        for (auto& s : sessions)
          if (s->last != latest(s->user)) return false;
        return true;
      },
      30s);
  stop = true;
  for (auto& t : threads) t.join();
  threads.clear();

  long long silent = 0, dups = 0, announced = 0, closes = 0, frames = 0;
  std::vector<std::string> problems;
  for (auto& s : sessions) {
    silent += s->silent_gaps;
    dups += s->duplicates;
    announced += s->announced_losses;
    closes += s->closes_1013;
    frames += s->frames;
    for (auto& p : s->problems) problems.push_back(s->user + ": " + p);
  }
  auto metrics = http_request("127.0.0.1", port, "GET", "/metrics");
  const std::string metric = "pushonce_gateway_catch_up_gap_closes_total";
  auto at = metrics.body.find("\n" + metric);
  long long gap_closes = -1;
  if (at != std::string::npos)
    gap_closes = std::stoll(metrics.body.substr(metrics.body.find("} ", at) + 2));
  auto summary = fmt::format(
      "chaos gaps: batches {} (refused {}) | link cuts {} | frames {} | silent gaps {} | "
      "duplicates {} | jumps owned up to (recovered:false) {} | 1013 closes {} (for gaps {})",
      batches, refused, cuts, frames, silent, dups, announced, closes, gap_closes);
  std::printf("%s\n", summary.c_str());
  std::fflush(stdout);
  INFO(summary);
  INFO(fmt::format("{}", fmt::join(problems, "\n")));
  INFO(d.digest());
  CHECK(caught_up);
  CHECK(silent == 0);
  CHECK(dups == 0);
  CHECK(cuts >= seconds.count() - 1);
  CHECK(gap_closes > 0);  // trimmed catch-ups happened, and were closed, not skipped
}

}  // namespace test_chaos_catch_up_gaps
