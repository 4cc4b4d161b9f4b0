// pushonce-bench: a load generator and exactly-once verifier for a running pushonce
// deployment (docs/benchmarks.md "pushonce-bench", docs/operations.md "Check your
// deployment").
//   fanout  sessions over the gateways, messages through POST /api/publish, every frame
//           verified; latency from when each message was due to when its frame arrived
//   idle    hold sessions; connect time, RSS per session of --pids and of the tool
//   floor   fanout against a stand-in built into the tool that does no work: the tool's
//           own share of every figure
// Exit status: 0 when every session got every message once, in order; 1 on any duplicate,
// loss, unannounced gap or reordering, a refused or unanswered publish, or nothing
// published; 2 on a usage error.

#include <pthread.h>
#include <sys/resource.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/json/serialize.hpp>
#include <cstdio>
#include <thread>

#include "bench/bench_options.hpp"
#include "bench/fanout.hpp"
#include "bench/floor_server.hpp"
#include "core/json_text.hpp"
#include "core/program.hpp"

using namespace pushonce;
using namespace pushonce::bench;
namespace asio = boost::asio;

int main(int argc, char** argv) {
  auto own = bench_option_description();
  program_info info{"pushonce-bench",
                    "usage: pushonce-bench fanout --gateway HOST:PORT[,...] --api-key KEY "
                    "[--sessions N] [--users M] [--rate R] [--messages N | --duration S] "
                    "[--json]\n"
                    "       pushonce-bench idle --gateway HOST:PORT[,...] --sessions N [--pids "
                    "PID,...] [--hold S]\n"
                    "       pushonce-bench floor [fanout options] [--duplicate-every N]\n"
                    "(the waiting-room workload is build/bin/bench_waiting_room, not a mode "
                    "here)\n"};
  return run_program(argc, argv, info, own, [&](command_line& cl) {
    auto o = parse_bench_options(cl.vm, cl.positional);
    // Sessions are descriptors: take the hard limit.
    rlimit rl{};
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
      rl.rlim_cur = rl.rlim_max;
      setrlimit(RLIMIT_NOFILE, &rl);
    }
    run_report report;
    if (o.what == bench_options::mode::floor) {
      asio::io_context io(1);
      auto guard = asio::make_work_guard(io);
      floor_server standin(io, o.floor_ports, o.duplicate_every);
      for (auto port : standin.ports()) o.gateways.push_back({"127.0.0.1", port});
      o.publish = o.gateways.front();
      std::thread t([&] { io.run(); });
      run_fanout(o, report, {t.native_handle()});
      guard.reset();
      io.stop();
      t.join();
      report.duplicate_every = o.duplicate_every;
    } else {
      run_fanout(o, report);
    }
    if (o.json)
      std::printf("%s\n", pushonce::json_text(report.to_json()).c_str());
    else
      std::fputs(report.table().c_str(), stdout);
    std::fflush(stdout);
    if (o.json)  // the table names the reasons on its first line; JSON in "failures"
      for (const auto& why : report.failures())
        std::fprintf(stderr, "pushonce-bench: FAILED: %s\n", why.c_str());
    return report.exit_status();
  });
}
