// `pushonce-leader report [--queue Q] [--since TIME] [--json]` (docs/capacity.md "Report"):
// the queue's per-minute hashes from --since (default: the last 24 hours; at most the 7
// days they are kept) read in one pipelined batch and summed by core/capacity_report.

#include <algorithm>
#include <boost/json.hpp>
#include <chrono>

#include "core/capacity_report.hpp"
#include "core/names.hpp"
#include "core/redis/failure_of.hpp"
#include "leader/cli/admin.hpp"

namespace pushonce::leader {

namespace asio = boost::asio;

asio::awaitable<int> run_report(admin_context& ctx) {
  if (!ctx.args.empty())
    co_return ctx.out.usage("usage: pushonce-leader report [--queue Q] [--since TIME] [--json]");
  if (!valid_name(ctx.queue)) co_return ctx.out.usage("--queue: not a queue name");
  const long long now = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
  constexpr long long day = 86400000;
  long long since = now - day;
  if (ctx.vm.count("since")) {
    auto s = parse_since(ctx.vm["since"].as<std::string>(), now);
    if (!s)
      co_return ctx.out.usage(
          "--since: give an RFC 3339 time, ms since the epoch, or an age (90m, 24h, 7d)");
    since = *s;
  }
  since = std::clamp(since, now - 7 * day, now);
  std::vector<long long> minutes;
  std::vector<redis::command> reads;
  for (long long m = since / 60000; m <= now / 60000; ++m) {
    minutes.push_back(m);
    reads.push_back({"HGETALL", ctx.k.queue(ctx.queue, "report:" + std::to_string(m))});
  }
  auto rs = co_await ctx.conn->exec_all(std::move(reads));
  std::vector<report_minute> found;
  for (std::size_t i = 0; i < rs.size(); ++i) {
    if (!rs[i].ok()) co_return ctx.out.fail(failure_of(rs[i]));
    const auto& e = rs[i].value.elements;
    if (e.empty()) continue;
    report_minute m{minutes[i], {}};
    for (std::size_t j = 0; j + 1 < e.size(); j += 2) m.fields.emplace_back(e[j].str, e[j + 1].str);
    found.push_back(std::move(m));
  }
  auto o = capacity_report(ctx.queue, since, now, found);
  co_return ctx.out.ok(o, capacity_report_text(o));
}

}  // namespace pushonce::leader
