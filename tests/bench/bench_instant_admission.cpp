// bench_instant_admission: how soon a join to a queue with capacity free is admitted
// (docs/capacity.md, "Instant admission"). Starts a leader, a worker and a gateway
// (--dev-auth) on the shared test redis-server, sets the queue's rate (--rate, 60000 a
// minute by default: a pass is always banked between joins), then N users, one after the
// other with --gap-ms between them, each open a WebSocket session, say hello and join; the
// time from sending `join` to the assignment frame, and from the `joined` reply to it, is
// measured per user. Prints one JSON line (p50/p99/max of both, in ms; how many were not
// admitted within 5 s). Exit 0 when every user was admitted.
//
//   bench_instant_admission [--joins N] [--gap-ms G] [--rate R]   (defaults 1000, 20, 60000)

#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/deployment.hpp"
#include "tests/support/ws_client.hpp"

namespace {

using namespace std::chrono_literals;
namespace json = boost::json;
using clock_type = std::chrono::steady_clock;

double ms_between(clock_type::time_point a, clock_type::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  auto i = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

struct one_join {
  std::optional<double> from_join, from_joined;
};

// One user: session, hello, welcome, join; the times to its assignment frame.
one_join admit(std::uint16_t port, const std::string& user) {
  one_join out;
  pushonce::test::ws_client ws;
  ws.connect("127.0.0.1", port, "/ws");
  ws.send(pushonce::test::hello_frame(user));
  const auto until = clock_type::now() + 5s;
  std::optional<clock_type::time_point> sent, joined;
  while (clock_type::now() < until) {
    auto f = ws.receive(50ms);
    if (!f) continue;
    auto o = json::parse(*f).as_object();
    const auto type = pushonce::test::str_field(o, "type");
    if (type == "welcome" && !sent) {
      sent = clock_type::now();
      ws.send(R"({"op":"join"})");
    } else if (type == "joined") {
      joined = clock_type::now();
    } else if (type == "message" && pushonce::test::str_field(o, "kind") == "assignment") {
      const auto at = clock_type::now();
      if (sent) out.from_join = ms_between(*sent, at);
      if (joined) out.from_joined = ms_between(*joined, at);
      break;
    }
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  int joins = 1000, gap_ms = 20;
  long long rate = 60000;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--joins") == 0) joins = std::max(1, std::atoi(argv[i + 1]));
    if (std::strcmp(argv[i], "--gap-ms") == 0) gap_ms = std::max(0, std::atoi(argv[i + 1]));
    if (std::strcmp(argv[i], "--rate") == 0) rate = std::max(1LL, std::atoll(argv[i + 1]));
  }
  pushonce::test::deployment d("bench", "instant");
  d.start_leader();
  d.start_worker();
  const auto port = d.port_of(d.start_gateway({"--dev-auth", "--max-connections-per-ip", "0"}));
  if (!d.wait_ready()) {
    std::fprintf(stderr, "not ready: %s\n", d.ready_failure().c_str());
    return 1;
  }
  auto set = d.admin({"settings", "--rate", std::to_string(rate)});
  if (set.code() != 0) {
    std::fprintf(stderr, "settings: %s\n", set.describe().c_str());
    return 1;
  }

  std::vector<double> from_join, from_joined;
  int missed = 0;
  for (int i = 0; i < joins; ++i) {
    auto r = admit(port, fmt::format("i{}", i));
    if (!r.from_join) {
      ++missed;
    } else {
      from_join.push_back(*r.from_join);
      if (r.from_joined) from_joined.push_back(*r.from_joined);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(gap_ms));
  }
  std::printf(
      "%s\n",
      fmt::format(R"({{"joins":{},"gap_ms":{},"rate_per_min":{},"admitted":{},"missed":{},)"
                  R"("join_to_assignment_ms_p50":{:.2f},"join_to_assignment_ms_p99":{:.2f},)"
                  R"("join_to_assignment_ms_max":{:.2f},"joined_to_assignment_ms_p50":{:.2f},)"
                  R"("joined_to_assignment_ms_p99":{:.2f},"joined_to_assignment_ms_max":{:.2f}}})",
                  joins, gap_ms, rate, from_join.size(), missed, percentile(from_join, 0.5),
                  percentile(from_join, 0.99), percentile(from_join, 1.0),
                  percentile(from_joined, 0.5), percentile(from_joined, 0.99),
                  percentile(from_joined, 1.0))
          .c_str());
  return missed == 0 ? 0 : 1;
}
