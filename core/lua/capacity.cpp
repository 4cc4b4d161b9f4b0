#include "core/lua/capacity.hpp"

#include <charconv>

#include "core/redis/failure_of.hpp"

namespace pushonce::lua {

admission_inputs admission_for(const keys& k, const std::string& queue, std::string id, bool renew,
                               std::optional<long long> at_ms) {
  return admission_inputs{.admissions = k.queue(queue, "admissions"),
                          .assigned = k.queue(queue, "assigned"),
                          .pending_ids = k.queue(queue, "pending:ids"),
                          .leases = k.queue(queue, "leases"),
                          .settings = k.queue(queue, "settings"),
                          .admissions_t = k.queue(queue, "admissions:t"),
                          .id = std::move(id),
                          .what = renew ? "renew" : "get",
                          .at_arg = at_ms ? std::to_string(*at_ms) : ""};
}

namespace {

// A score's text (an integer, or a double for one written as such); none when empty or "inf".
std::optional<long long> score_ms(const std::string& t) {
  if (t.empty()) return std::nullopt;
  double v = 0;
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc{} || p != t.data() + t.size()) return std::nullopt;
  return static_cast<long long>(v);
}

}  // namespace

outcome<admission_reply> admission_reply_of(const redis::result& r) {
  if (!r.ok()) return failure_of(r);
  const auto& e = r.value.elements;
  if (e.size() != 4) return failure{errc::internal, "admission: unexpected reply"};
  return admission_reply{e[0].str, e[1].str, e[2].str, score_ms(e[3].str)};
}

next_due_inputs next_due_for(const keys& k, const std::string& queue) {
  return next_due_inputs{.settings = k.queue(queue, "settings"),
                         .waiting = k.queue(queue, "waiting"),
                         .assigned = k.queue(queue, "assigned")};
}

admissions_list_inputs admissions_list_for(const keys& k, const std::string& queue,
                                           std::string user) {
  return admissions_list_inputs{.assigned = k.queue(queue, "assigned"),
                                .pending_ids = k.queue(queue, "pending:ids"),
                                .pending = k.queue(queue, "pending"),
                                .leases = k.queue(queue, "leases"),
                                .only = std::move(user)};
}

std::vector<live_admission> admissions_list_of(const redis::reply& r) {
  std::vector<live_admission> out;
  const auto& e = r.elements;
  for (std::size_t i = 0; i + 6 <= e.size(); i += 6)
    out.push_back({e[i].str, e[i + 1].str, e[i + 2].str, e[i + 3].str, score_ms(e[i + 4].str),
                   score_ms(e[i + 5].str)});
  return out;
}

}  // namespace pushonce::lua
