#include "bench/report.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace pushonce::bench {
namespace json = boost::json;
namespace {

double ms(std::uint64_t us) {
  return static_cast<double>(us) / 1000.0;
}

json::object latency_json(const latency_histogram& h) {
  return json::object{{"count", h.count()},
                      {"p50_ms", ms(h.percentile(0.50))},
                      {"p90_ms", ms(h.percentile(0.90))},
                      {"p99_ms", ms(h.percentile(0.99))},
                      {"p999_ms", ms(h.percentile(0.999))},
                      {"max_ms", ms(h.max())},
                      {"mean_ms", h.mean() / 1000.0},
                      {"relative_error", latency_histogram::relative_error}};
}

double per_message_us(double cpu_s, std::uint64_t messages) {
  return messages ? cpu_s * 1e6 / static_cast<double>(messages) : 0.0;
}

}  // namespace

double run_report::frames_per_s() const {
  return delivery_s > 0 ? static_cast<double>(ledger.delivered) / delivery_s : 0.0;
}

double run_report::messages_per_s() const {
  return publish_s > 0 ? static_cast<double>(ledger.published) / publish_s : 0.0;
}

std::vector<std::string> run_report::failures() const {
  std::vector<std::string> why;
  if (frames.duplicates != 0) why.push_back(fmt::format("{} duplicates", frames.duplicates));
  if (ledger.lost != 0) why.push_back(fmt::format("{} messages lost", ledger.lost));
  if (frames.out_of_order != 0)
    why.push_back(fmt::format("{} messages out of order", frames.out_of_order));
  if (frames.gaps != 0) why.push_back(fmt::format("{} unannounced offset gaps", frames.gaps));
  if (ledger.delivered_refused != 0)
    why.push_back(fmt::format("{} messages delivered though refused", ledger.delivered_refused));
  if (sessions > 0 && opened == 0) why.push_back("no session opened");
  if (requests > 0) {
    // A publish the system did not take is a message the run could not check: the
    // verifier only passes what it checked (a wrong --api-key refuses every one).
    if (ledger.refused != 0) {
      std::string errs;
      for (const auto& [k, v] : publish_errors)
        errs += fmt::format("{}{}×{}", errs.empty() ? "" : " ", v, k);
      why.push_back(fmt::format("{} messages refused (publish errors: {})", ledger.refused,
                                errs.empty() ? "none recorded" : errs));
    }
    if (ledger.unknown != 0)
      why.push_back(fmt::format("{} messages unanswered by the end", ledger.unknown));
    if (ledger.published == 0) why.push_back("nothing was published");
  }
  return why;
}

int run_report::exit_status() const {
  return failures().empty() ? 0 : 1;
}

json::object run_report::to_json() const {
  json::object o;
  o["mode"] = mode;
  o["ok"] = exit_status() == 0;
  json::array why;
  for (auto& f : failures()) why.emplace_back(f);
  o["failures"] = std::move(why);
  o["sessions"] = sessions;
  o["users"] = users;
  o["gateways"] = gateways;
  o["threads"] = threads;
  o["rate"] = rate;
  o["batch"] = batch;
  o["inflight"] = inflight;
  o["opened"] = opened;
  o["connect_failures"] = connect_failures;
  o["disconnects"] = disconnects;
  o["sessions_down_at_end"] = sessions_down_at_end;
  o["connect_s"] = connect_s;
  o["connect_latency"] = latency_json(connect_us);
  o["published"] = ledger.published;
  o["refused"] = ledger.refused;
  o["unknown"] = ledger.unknown;
  o["requests"] = requests;
  o["retries"] = retries;
  json::object errors;
  for (const auto& [k, v] : publish_errors) errors[k] = v;
  o["publish_errors"] = std::move(errors);
  o["late_batches"] = late_batches;
  o["publish_s"] = publish_s;
  o["messages_per_s"] = messages_per_s();
  o["delivery_s"] = delivery_s;
  o["frames_per_s"] = frames_per_s();
  o["delivered_messages_per_s"] =
      delivery_s > 0 ? static_cast<double>(ledger.published) / delivery_s : 0.0;
  o["expected"] = ledger.expected;
  o["delivered"] = ledger.delivered;
  o["duplicates"] = frames.duplicates;
  o["lost"] = ledger.lost;
  o["announced_missing"] = ledger.announced_missing;
  o["delivered_refused"] = ledger.delivered_refused;
  o["out_of_order"] = frames.out_of_order;
  o["gaps"] = frames.gaps;
  o["gap_offsets"] = frames.gap_offsets;
  o["not_recovered"] = frames.not_recovered;
  o["reconnects"] = frames.reconnects;
  o["foreign_frames"] = frames.foreign;
  o["error_frames"] = error_frames;
  o["bad_frames"] = bad_frames;
  o["latency"] = latency_json(latency_us);
  o["accepted_to_frame"] = latency_json(accepted_us);
  o["tool_cpu_s"] = tool_cpu_s;
  o["tool_cpu_us_per_message"] = per_message_us(tool_cpu_s, ledger.published);
  o["tool_cpu_us_per_frame"] = per_message_us(tool_cpu_s, ledger.delivered);
  o["tool_cpu_share"] = delivery_s > 0 ? tool_cpu_s / delivery_s : 0.0;
  o["tool_rss_bytes_per_session"] =
      opened ? (tool_rss_bytes - tool_rss_bytes_idle) / static_cast<double>(opened) : 0.0;
  if (mode == "floor") {
    o["standin_cpu_s"] = standin_cpu_s;
    o["duplicate_every"] = duplicate_every;
  }
  if (system.rss_bytes_after > 0) {
    o["pids_rss_bytes_per_session"] =
        opened ? (system.rss_bytes_after - system.rss_bytes_before) / static_cast<double>(opened)
               : 0.0;
    o["pids_cpu_s"] = system.cpu_s;
    o["pids_cpu_us_per_message"] = per_message_us(system.cpu_s, ledger.published);
  }
  return o;
}

std::string run_report::table() const {
  std::string t;
  auto row = [&](std::string_view k, const std::string& v) {
    fmt::format_to(std::back_inserter(t), "  {:<26} {}\n", k, v);
  };
  const auto why = failures();
  std::string reasons;
  for (const auto& f : why) reasons += (reasons.empty() ? "" : "; ") + f;
  fmt::format_to(std::back_inserter(t), "pushonce-bench {}: {}\n", mode,
                 why.empty() ? std::string("OK") : "FAILED: " + reasons);
  row("sessions / users",
      fmt::format("{} / {} on {} gateway(s), {} thread(s)", sessions, users, gateways, threads));
  row("opened", fmt::format("{} in {:.2f} s, connect p50 {:.2f} ms p99 {:.2f} ms, {} failed",
                            opened, connect_s, ms(connect_us.percentile(0.5)),
                            ms(connect_us.percentile(0.99)), connect_failures));
  if (requests > 0) {
    row("rate", rate > 0 ? fmt::format("{:.0f} msgs/s scheduled, batches of {}", rate, batch)
                         : fmt::format("as fast as possible, batches of {}, {} in flight", batch,
                                       inflight));
    row("published", fmt::format("{} ({:.0f} msgs/s), {} refused, {} unanswered", ledger.published,
                                 messages_per_s(), ledger.refused, ledger.unknown));
    std::string errs;
    for (const auto& [k, v] : publish_errors) errs += fmt::format("{}×{} ", v, k);
    row("publish errors", errs.empty() ? "none" : errs);
    row("retries / late batches", fmt::format("{} / {}", retries, late_batches));
    row("delivered", fmt::format("{} of {} owed ({:.0f} frames/s)", ledger.delivered,
                                 ledger.expected, frames_per_s()));
    row("latency (due → frame)",
        fmt::format("p50 {:.3f} ms, p90 {:.3f}, p99 {:.3f}, p99.9 {:.3f}, max {:.3f} (±{:.1f} %)",
                    ms(latency_us.percentile(0.5)), ms(latency_us.percentile(0.9)),
                    ms(latency_us.percentile(0.99)), ms(latency_us.percentile(0.999)),
                    ms(latency_us.max()), latency_histogram::relative_error * 100));
    row("accepted (ts) → frame",
        fmt::format("p50 {:.1f} ms, p99 {:.1f} (the system's ts, ms-granular)",
                    ms(accepted_us.percentile(0.5)), ms(accepted_us.percentile(0.99))));
  }
  row("duplicates", std::to_string(frames.duplicates));
  row("lost", std::to_string(ledger.lost));
  row("out of order / gaps",
      fmt::format("{} / {} ({} offsets)", frames.out_of_order, frames.gaps, frames.gap_offsets));
  row("recovered:false", fmt::format("{} welcomes, {} messages missing before them",
                                     frames.not_recovered, ledger.announced_missing));
  row("reconnects", fmt::format("{} ({} disconnects, {} sessions down at the end)",
                                frames.reconnects, disconnects, sessions_down_at_end));
  if (requests > 0)
    row("tool CPU", fmt::format("{:.3f} s: {:.2f} µs/message, {:.2f} µs/frame, {:.0f} % of a core",
                                tool_cpu_s, per_message_us(tool_cpu_s, ledger.published),
                                per_message_us(tool_cpu_s, ledger.delivered),
                                delivery_s > 0 ? 100 * tool_cpu_s / delivery_s : 0.0));
  if (opened > 0)
    row("tool RSS per session", fmt::format("{:.0f} B", (tool_rss_bytes - tool_rss_bytes_idle) /
                                                            static_cast<double>(opened)));
  if (mode == "floor") row("stand-in CPU", fmt::format("{:.3f} s", standin_cpu_s));
  if (system.rss_bytes_after > 0) {
    row("--pids RSS per session",
        fmt::format("{:.0f} B", opened ? (system.rss_bytes_after - system.rss_bytes_before) /
                                             static_cast<double>(opened)
                                       : 0.0));
    row("--pids CPU", fmt::format("{:.3f} s, {:.2f} µs/message", system.cpu_s,
                                  per_message_us(system.cpu_s, ledger.published)));
  }
  return t;
}

std::string progress_line(double t_s, std::uint64_t sent, std::uint64_t received, double sent_per_s,
                          double received_per_s, const latency_histogram& h,
                          std::uint64_t duplicates, std::uint64_t errors) {
  return fmt::format(
      "{:6.1f} s  sent {} ({:.0f}/s)  frames {} ({:.0f}/s)  p50 {:.2f} ms  p99 {:.2f} ms  "
      "duplicates {}  errors {}",
      t_s, sent, sent_per_s, received, received_per_s, ms(h.percentile(0.5)),
      ms(h.percentile(0.99)), duplicates, errors);
}

}  // namespace pushonce::bench
