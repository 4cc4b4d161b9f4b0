#include "tests/chaos/chaos_checks.hpp"

#include <fmt/format.h>

#include <boost/json.hpp>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "core/message.hpp"
#include "tests/support/deployment.hpp"

namespace pushonce::test::chaos {

namespace {

// What one user's inbox holds.
struct inbox_view {
  std::vector<std::string> ids;  // by offset - 1
  std::vector<long long> offsets;
  std::vector<std::string> kinds;
  std::size_t malformed = 0;
};

}  // namespace

delivery_report check_delivery(probe& db, const pushonce::keys& k,
                               const std::vector<std::unique_ptr<session_state>>& sessions,
                               const load_result& load) {
  delivery_report r;
  const std::string bus_outbox = k.bus(0, "outbox");
  const std::string queue_outbox = k.queue(queue_name, "outbox");
  auto bus_entries = read_stream(db, bus_outbox);
  auto queue_entries = read_stream(db, queue_outbox);
  std::unordered_map<std::string, inbox_view> inboxes;
  for (int i = 0; i < user_count; ++i) {
    auto user = user_name(i);
    auto& view = inboxes[user];
    for (auto& e : read_stream(db, k.user(user, "inbox"))) {
      auto v = parse_or_null(e.fields["f"]);
      if (!v.is_object()) {
        ++view.malformed;
        ++r.inbox_malformed;
        continue;
      }
      auto& o = v.as_object();
      long long off = int_field(o, "offset");
      if (off != static_cast<long long>(view.ids.size()) + 1 ||
          e.entry_id != std::to_string(off) + "-0")
        ++r.inbox_offset_errors;
      view.ids.push_back(str_field(o, "id"));
      view.offsets.push_back(off);
      view.kinds.push_back(str_field(o, "kind"));
    }
  }

  // Exactly once into the inboxes: each outbox entry once in its user's inbox, nothing else.
  auto detail = [&](std::string what) {
    if (r.details.size() < 20) r.details.push_back(std::move(what));
  };
  std::unordered_map<std::string, std::unordered_map<std::string, int>> in_inbox;  // user → id → n
  for (auto& [user, view] : inboxes)
    for (std::size_t j = 0; j < view.ids.size(); ++j) {
      int n = ++in_inbox[user][view.ids[j]];
      if (n == 2) {
        ++r.duplicates;
        detail(fmt::format("id {} twice in the inbox of {}", view.ids[j], user));
      }
      if (view.kinds[j] == "assignment") ++r.assignments;
    }
  std::set<std::string> lost;  // "user id" of messages that are not in their user's inbox
  std::unordered_map<std::string, std::unordered_set<std::string>> outboxed_ids;
  for (auto* entries : {&bus_entries, &queue_entries})
    for (auto& e : *entries)
      for (auto line : pushonce::split_bus_payload(e.fields["m"])) {
        auto m = pushonce::parse_bus_message(line);
        if (!m) {
          detail(fmt::format("outbox entry {} holds a malformed line", e.entry_id));
          continue;
        }
        const auto &id = m->id, &user = m->user;
        outboxed_ids[user].insert(id);
        if (!in_inbox[user].count(id)) {
          lost.insert(user + " " + id);
          detail(
              fmt::format("outbox entry {} (id {}) to {} not in its inbox", e.entry_id, id, user));
        }
      }
  for (auto& [user, ids] : in_inbox)
    for (auto& [id, n] : ids)
      if (!outboxed_ids[user].count(id)) {
        ++r.phantoms;
        detail(fmt::format("id {} in the inbox of {} is in no outbox", id, user));
      }

  // Custom publishes: one message per key; each id in its user's inbox.
  std::unordered_set<std::string> custom_ids;
  for (auto& m : load.custom) {
    if (m.id.empty()) continue;
    custom_ids.insert(m.id);
    if (!in_inbox[m.user].count(m.id)) {
      lost.insert(m.user + " " + m.id);
      detail(fmt::format("custom message {} (key {}) to {} not in its inbox", m.id, m.key, m.user));
    }
  }
  r.losses += static_cast<long long>(lost.size());

  // Sessions: exactly their inbox, in offset order, each id once.
  for (auto& sp : sessions) {
    auto& s = *sp;
    auto& view = inboxes[s.user];
    r.frames += static_cast<long long>(s.frames.size());
    r.not_recovered += s.not_recovered;
    r.welcome_failures += s.welcome_failures;
    r.protocol_errors += s.protocol_errors;
    r.reconnects += s.connects - 1;
    r.latencies.insert(r.latencies.end(), s.latency_ms.begin(), s.latency_ms.end());
    r.gaps += s.offset_gaps;
    std::unordered_set<std::string> seen;
    for (std::size_t j = 0; j < s.frames.size(); ++j) {
      const auto& [id, off] = s.frames[j];
      if (!seen.insert(id).second) {
        ++r.duplicates;
        detail(fmt::format("session {} got id {} twice (offset {})", s.user, id, off));
      }
      if (off < 1 || static_cast<std::size_t>(off) > view.ids.size()) {
        ++r.mismatches;
        detail(fmt::format("session {}: offset {} (id {}) is not in the inbox", s.user, off, id));
      } else if (view.ids[static_cast<std::size_t>(off) - 1] != id) {
        ++r.mismatches;
        detail(fmt::format("session {}: offset {} is id {}, the inbox says {}", s.user, off, id,
                           view.ids[static_cast<std::size_t>(off) - 1]));
      }
    }
    for (std::size_t j = 0; j < view.ids.size(); ++j)
      if (!seen.count(view.ids[j])) {
        ++r.losses;
        detail(fmt::format("session {} never got id {} (offset {})", s.user, view.ids[j], j + 1));
      }
    for (auto& p : s.problems) detail("session " + s.user + ": " + p);
  }
  r.custom_ids = custom_ids.size();
  for (auto& e : bus_entries)
    r.bus_messages += static_cast<long long>(pushonce::split_bus_payload(e.fields["m"]).size());
  return r;
}

}  // namespace pushonce::test::chaos
