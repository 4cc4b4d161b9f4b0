#include "core/lua/assign.hpp"

namespace pushonce::lua {

assign_inputs assign_for(const keys& k, const std::string& queue, const assign_settings& s) {
  return assign_inputs{.waiting = k.queue(queue, "waiting"),
                       .assigned = k.queue(queue, "assigned"),
                       .res_meta = k.queue(queue, "res:meta"),
                       .res_free = k.queue(queue, "res:free"),
                       .res_holder = k.queue(queue, "res:holder"),
                       .seq = k.queue(queue, "seq"),
                       .outbox = k.queue(queue, "outbox"),
                       .fence = k.queue(queue, "fence"),
                       .pending = k.queue(queue, "pending"),
                       .pending_ids = k.queue(queue, "pending:ids"),
                       .events = k.queue(queue, "events"),
                       .settings = k.queue(queue, "settings"),
                       .rate = k.queue(queue, "rate"),
                       .admissions = k.queue(queue, "admissions"),
                       .admissions_t = k.queue(queue, "admissions:t"),
                       .leases = k.queue(queue, "leases"),
                       .queue = queue,
                       .source_arg = std::to_string(s.source),
                       .token_arg = std::to_string(s.fencing_token),
                       .timeout_arg = std::to_string(s.accept_timeout_ms),
                       .retention_arg = std::to_string(s.outbox_retention.count()),
                       .bus_channel = s.publish ? k.bus_channel() : std::string(),
                       .wake_channel = k.wake_channel(),
                       .max_arg = std::to_string(s.max),
                       .record_ms_arg = std::to_string(s.admission_record.count()),
                       .planned_arg = {},
                       // Without a plan: the least base of the ids (assign.lua ARGV[11]).
                       .planned_seq = s.least_seq > 0 ? std::to_string(s.least_seq) : "",
                       .more_args = {}};
}

assign_inputs planned_assign_for(const keys& k, const std::string& queue, const assign_settings& s,
                                 const admission::assign_plan& plan,
                                 const std::vector<std::string>& tokens) {
  auto in = assign_for(k, queue, s);
  auto args = admission::plan_args(plan, tokens);  // count, seq, then user, resource, token
  in.planned_arg = std::move(args.at(0));
  in.planned_seq = std::move(args.at(1));
  in.more_args.assign(std::make_move_iterator(args.begin() + 2),
                      std::make_move_iterator(args.end()));
  return in;
}

std::vector<assignment> assignments_of(const redis::reply& r, std::size_t width) {
  std::vector<assignment> out;
  const auto& e = r.elements;
  out.reserve(e.size() / width);
  for (std::size_t i = 0; i + width <= e.size(); i += width)
    out.push_back({e[i].str, e[i + 1].str, e[i + 2].str});
  return out;
}

bool assign_was_stale(const redis::reply& r) {
  return r.elements.size() == 1 && r.elements[0].str == "stale";
}

std::string bus_message_of(const redis::reply& r, std::size_t width) {
  const auto& e = r.elements;
  if (width == 0 || e.size() % width != 1 || !e.back().is_string()) return {};
  return e.back().str;
}

assign_plan_inputs assign_plan_for(const keys& k, const std::string& queue, long long max,
                                   long long least_seq) {
  return assign_plan_inputs{.waiting = k.queue(queue, "waiting"),
                            .assigned = k.queue(queue, "assigned"),
                            .res_meta = k.queue(queue, "res:meta"),
                            .res_free = k.queue(queue, "res:free"),
                            .res_holder = k.queue(queue, "res:holder"),
                            .seq = k.queue(queue, "seq"),
                            .settings = k.queue(queue, "settings"),
                            .max_arg = std::to_string(max),
                            .least_arg = least_seq > 0 ? std::to_string(least_seq) : ""};
}

std::optional<admission::assign_plan> assign_plan_of(const redis::reply& r) {
  std::vector<std::string> items;
  items.reserve(r.elements.size());
  for (const auto& e : r.elements)
    items.push_back(e.kind == redis::reply::type::integer ? std::to_string(e.integer) : e.str);
  return admission::plan_of_reply(items);
}

expire_inputs expire_for(const keys& k, const std::string& queue, const assign_settings& s) {
  return expire_inputs{.pending = k.queue(queue, "pending"),
                       .pending_ids = k.queue(queue, "pending:ids"),
                       .assigned = k.queue(queue, "assigned"),
                       .res_free = k.queue(queue, "res:free"),
                       .res_seq = k.queue(queue, "res:seq"),
                       .res_holder = k.queue(queue, "res:holder"),
                       .seq = k.queue(queue, "seq"),
                       .outbox = k.queue(queue, "outbox"),
                       .fence = k.queue(queue, "fence"),
                       .admissions = k.queue(queue, "admissions"),
                       .leases = k.queue(queue, "leases"),
                       .queue = queue,
                       .source_arg = std::to_string(s.source),
                       .token_arg = std::to_string(s.fencing_token),
                       .retention_arg = std::to_string(s.outbox_retention.count()),
                       .bus_channel = s.publish ? k.bus_channel() : std::string(),
                       .wake_channel = k.wake_channel(),
                       .max_arg = std::to_string(s.max),
                       .least_arg = s.least_seq > 0 ? std::to_string(s.least_seq) : ""};
}

}  // namespace pushonce::lua
