// pushonce-leader: `run` is the queue daemon (leader/run_daemon); every other subcommand is
// the admin CLI (leader/cli/).

#include <boost/program_options.hpp>
#include <cstdio>
#include <cstring>
#include <string_view>

#include "core/env_file.hpp"
#include "core/log.hpp"
#include "core/program.hpp"
#include "leader/cli/admin.hpp"
#include "leader/run_daemon.hpp"

namespace po = boost::program_options;
using namespace pushonce;

namespace {

constexpr const char* usage_text =
    "usage: pushonce-leader run [--queue Q]... [--accept-timeout S] [--lease-ms MS]\n"
    "                           [--assign-batch N] [--opening-batch N] [--metrics-listen ADDR]\n"
    "       pushonce-leader join|leave|position USER [--queue Q] [--json]\n"
    "       pushonce-leader accept USER [--queue Q] [--id ASSIGNMENT] [--json]\n"
    "       pushonce-leader token USER [--ttl SECONDS] (signs with PUSHONCE_JWT_SECRET)\n"
    "       pushonce-leader queue [--queue Q] [--limit N] [--offset N] [--json]\n"
    "       pushonce-leader resource add ID... [--meta JSON] | release ID | remove ID | list\n"
    "       pushonce-leader publish USER JSON [--id KEY] [--json]\n"
    "       pushonce-leader settings [--max-waiting N] [--abandon-after S] [--accept-timeout S]\n"
    "                                [--join-pow-bits N] [--rate N] [--passes on|off] [--burst B]\n"
    "                                [--max-active N] [--session S] [--session-renewal on|off]\n"
    "                                [--queue Q] [--json]\n"
    "       pushonce-leader pause|resume|close [--queue Q] [--json]\n"
    "       pushonce-leader open [--at TIME] [--shuffle] [--queue Q] [--json]\n"
    "       pushonce-leader status [--queue Q] [--json]\n"
    "       pushonce-leader report [--queue Q] [--since TIME] [--json]\n"
    "       pushonce-leader trace ID | trace KEY --user USER [--json]\n"
    "       pushonce-leader disconnect USER [--revoke [--for SECONDS]] [--json]\n"
    "       pushonce-leader admission verify TOKEN | renew ID | release ID [--json]\n"
    "       pushonce-leader admission list [--queue Q] [--user USER] [--json]\n"
    "       pushonce-leader dead-letters list [--limit N] | replay ID | purge [--json]\n"
    "Admin commands read /etc/pushonce/pushonce.env when it exists and can be read (--env-file "
    "FILE for another; the environment wins).\n";

}  // namespace

int main(int argc, char** argv) {
  log::set_tag("leader");
  bool json = false;
  for (int i = 1; i < argc; ++i) json |= std::strcmp(argv[i], "--json") == 0;

  po::options_description own("leader options");
  own.add_options()("queue", po::value<std::vector<std::string>>()->composing(),
                    "queue name (default: default)")(
      "json", po::bool_switch(), "print one JSON object")("limit", po::value<long long>(),
                                                          "queue: how many users to list")(
      "offset", po::value<long long>(), "queue: how many to skip from the head (pages)")(
      "meta", po::value<std::string>(), "resource add: metadata JSON")(
      "id", po::value<std::string>(),
      "publish: idempotency key; accept: the assignment id; run: leader name")(
      "ttl", po::value<long long>(), "token: lifetime in seconds")(
      "user", po::value<std::string>()->value_name("USER"),
      "trace: the user whose idempotency key (publish --id KEY) names the message; admission "
      "list: only this user")(
      "accept-timeout", po::value<double>()->default_value(0),
      "run: seconds to accept (0: never expire); settings: the queue's own")(
      "lease-ms", po::value<long long>()->default_value(5000), "run: leader lease (ms)")(
      "wait-replicas", po::value<int>(),
      "run: replicas (0-16) that must hold a queue's assignments before their bus message goes "
      "out (env PUSHONCE_WAIT_REPLICAS; default 0)")(
      "wait-replicas-timeout-ms", po::value<long long>()->default_value(100),
      "run: how long that WAIT may take; short of the replicas the bus message is held back "
      "and the outbox entry re-driven after a lease")(
      "assign-batch", po::value<long long>()->default_value(200),
      "run: the most assignments (or expiries) one script call makes, 1..1000")(
      "opening-batch", po::value<long long>()->default_value(1000),
      "run: pre-queued users drawn or moved per script call at an opening, 1..1000")(
      "gateway-grace-ms", po::value<long long>()->default_value(5000),
      "run: how long a gateway instance that has not beaten yet counts as alive after it "
      "registered, 1000..600000 (then its sessions are counted closed)")(
      "max-waiting", po::value<long long>(), "settings: the most users waiting (0: no cap)")(
      "join-pow-bits", po::value<long long>(),
      "settings: leading zero bits of the proof of work a join needs (0: off, up to 32)")(
      "abandon-after", po::value<long long>(),
      "settings: seconds without a session before a user leaves the line (0: never)")(
      "rate", po::value<long long>(),
      "settings: at most N assignments a minute, evenly paced (0: no pacing)")(
      "passes", po::value<std::string>()->value_name("on|off"),
      "settings: with a rate, admission passes when no resource is free (default on)")(
      "burst", po::value<long long>(), "settings: passes banked while nobody waits (default 0)")(
      "max-active", po::value<long long>(),
      "settings: the most admissions live at once (0: no cap)")(
      "session", po::value<long long>(),
      "settings: seconds an admission lasts after its last renewal (0: no lease)")(
      "session-renewal", po::value<std::string>()->value_name("on|off"),
      "settings: renewals extend the lease (default on; off: a hard cap from the assignment)")(
      "since", po::value<std::string>()->value_name("TIME"),
      "report: from when (RFC 3339, ms since the epoch, or an age: 90m, 24h, 7d; default 24h)")(
      "at", po::value<std::string>(), "open: when (RFC 3339 or ms since the epoch)")(
      "shuffle", po::bool_switch(), "open: shuffle the pre-queue at the opening")(
      "revoke", po::bool_switch(), "disconnect: also refuse the user's tokens issued until now")(
      "for", po::value<long long>(),
      "disconnect --revoke: seconds the revocation is kept (default 86400)")(
      "env-file", po::value<std::string>()->value_name("FILE"),
      "read PUSHONCE_* settings from FILE (systemd EnvironmentFile syntax; the environment "
      "wins), and its secrets/redis_url and secrets/jwt_secret when readable; admin commands "
      "default to /etc/pushonce/pushonce.env when it exists and can be read")(
      "metrics-listen", po::value<std::string>()->value_name("ADDR"),
      "run: serve GET /metrics (Prometheus) and /healthz on HOST:PORT (env "
      "PUSHONCE_METRICS_LISTEN; default: none)");
  // The environment file goes first: the common options read the variables it sets.
  // Admin commands default to the installed one; `run` reads one only when named.
  {
    std::string env_file;
    bool daemon = false, given = false;
    for (int i = 1; i < argc; ++i) {
      std::string_view a = argv[i];
      if (a == "run") daemon = true;
      if (a == "--env-file" && i + 1 < argc) {
        env_file = argv[i + 1];
        given = true;
      } else if (a.rfind("--env-file=", 0) == 0) {
        env_file = std::string(a.substr(11));
        given = true;
      }
    }
    if (given || !daemon) {
      try {
        load_env_file(env_file);
      } catch (const usage_error& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return exit_usage;
      }
    }
  }
  program_info info{"pushonce-leader", usage_text, json};
  return run_program(argc, argv, info, own, [&](command_line& cl) {
    if (!cl.positional.empty() && cl.positional[0] == "run") return leader::run_daemon(cl);
    return leader::run_command(cl, json);
  });
}
