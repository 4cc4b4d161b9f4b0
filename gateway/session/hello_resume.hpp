#pragma once
// Where a session opened by hello starts, and what its welcome says (docs/protocol.md
// "Guarantees"). Plain logic, no sockets, no Redis; session_flow::on_hello carries it out:
//
//   hello_resume r(h.since);
//   session.lua with r.session_args()        -> r.on_opened(epoch, latest, acked, rotated)
//   route the channel, read the inbox after r.start()
//   r.on_first_page(first offset of the page) -> welcome's recovered, offsets owned as lost
//
// The rules (plan_resume, plan_welcome in resume_state.hpp):
// - no since: start at the acked offset (never beyond the latest); recovered.
// - since in another epoch (or the epoch was rotated by session.lua): its offsets say
//   nothing about this epoch: start at the acked offset, not recovered.
// - since beyond the latest offset: the client claims more than was delivered: start at
//   the latest, not recovered.
// - otherwise start at since (the client's word wins over acked, either way).
// - the first page begins after start + 1 (trimmed), or is empty while latest > start
//   (expired): not recovered, and the offsets before what is left count as sent.

#include <optional>
#include <string>
#include <string_view>

#include "core/lua/session.hpp"
#include "gateway/protocol/protocol.hpp"
#include "gateway/session/resume_state.hpp"

namespace pushonce::gateway {

class hello_resume {
 public:
  explicit hello_resume(std::optional<since_position> since) : since_(std::move(since)) {}

  /// What session.lua checks (a since beyond the stored offset rotates the epoch).
  std::optional<lua::session_since> session_args() const;

  /// session.lua's answer: the epoch in force, its latest and acked offsets, and whether it
  /// rotated the epoch. Returns the plan (start, and recovered so far).
  const resume_plan& on_opened(std::string_view epoch, long long latest, long long acked,
                               bool rotated);

  /// The first inbox entry after start() (std::nullopt: the read was empty). Call after
  /// on_opened.
  welcome_plan on_first_page(std::optional<long long> first) const;

  long long start() const { return plan_.start; }
  long long latest() const { return latest_; }
  /// session.lua rotated the epoch: the since offset was beyond the stored counter.
  bool rotated() const { return rotated_; }
  const std::optional<since_position>& since() const { return since_; }

 private:
  std::optional<since_position> since_;
  resume_plan plan_;
  long long latest_ = 0;
  bool rotated_ = false;
};

}  // namespace pushonce::gateway
