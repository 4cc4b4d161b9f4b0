#pragma once
// Exactly-once bookkeeping of one run, without sockets. A message of the run carries its
// sequence number k (in `data`); message k goes to user k mod U. Two pieces:
//
// - session_verifier: what one WebSocket session (of one user, over any number of
//   reconnects) received. Per message: seen before on this session (a duplicate, whatever
//   its id: a message the system re-published under a new id is still one message), and
//   its offset against the one expected (consecutive within a session; a jump forward is
//   a gap, a step back is out of order). A resume answered `recovered:false` announces
//   that what came before may be missing: the offsets then start again from whatever
//   arrives next, and a missing message published before that welcome is counted as
//   announced, not as lost.
// - delivery_ledger: what was published (answered 200), refused (an error answer: nothing
//   published) or left unknown (no answer); at the end each session is checked against
//   it: every published message of its user that was due after the session's first
//   welcome must be there.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace pushonce::bench {

struct session_counts {
  std::uint64_t received = 0;       // distinct messages of the run
  std::uint64_t duplicates = 0;     // a message received again on the same session
  std::uint64_t out_of_order = 0;   // a new message whose offset is below the one expected
  std::uint64_t gaps = 0;           // offsets skipped with no recovered:false before them
  std::uint64_t gap_offsets = 0;    // how many offsets those gaps skipped
  std::uint64_t reconnects = 0;     // welcomes after the first
  std::uint64_t not_recovered = 0;  // welcomes with recovered:false (announced windows)
  std::uint64_t foreign = 0;        // message frames not of this run or not for this user

  void add(const session_counts& o);
};

class session_verifier {
 public:
  /// The session of `user` (0..users-1) among `users`.
  session_verifier(std::uint64_t user, std::uint64_t users);

  /// A welcome at `now` (ns since the run started). `resumed`: the hello carried `since`.
  void on_welcome(bool resumed, bool recovered, std::string_view epoch, std::int64_t offset,
                  std::int64_t now);
  enum class verdict { fresh, duplicate, foreign };
  /// A message frame: the run's sequence number and the frame's offset.
  verdict on_message(std::uint64_t seq, std::int64_t offset);
  /// A message frame that is not of this run (another publisher's traffic to the user).
  void on_foreign() { ++counts_.foreign; }
  /// The connection ended (a reconnect follows, or the run ends).
  void on_disconnect() { connected_ = false; }

  bool connected() const { return connected_; }
  bool welcomed() const { return first_welcome_ >= 0; }
  /// What a resuming hello sends as `since`: the epoch of the last welcome and the last
  /// offset received in order (0 before any).
  const std::string& epoch() const { return epoch_; }
  std::int64_t resume_offset() const { return last_offset_; }

  std::uint64_t user() const { return user_; }
  bool received(std::uint64_t seq) const;
  /// When the first welcome came (-1: never).
  std::int64_t first_welcome() const { return first_welcome_; }
  /// True when a recovered:false welcome came after `t`.
  bool announced_after(std::int64_t t) const;
  const session_counts& counts() const { return counts_; }

 private:
  std::uint64_t user_, users_;
  std::vector<std::uint8_t> seen_;  // by slot: seq / users
  std::string epoch_;
  std::int64_t last_offset_ = 0;
  bool baseline_ = false;  // the next offset is known (last_offset_ + 1)
  bool connected_ = false;
  std::int64_t first_welcome_ = -1;
  std::vector<std::int64_t> not_recovered_at_;
  session_counts counts_;
};

struct ledger_totals {
  std::uint64_t published = 0;          // messages answered 200
  std::uint64_t refused = 0;            // messages whose request got an error answer
  std::uint64_t unknown = 0;            // messages with no answer by the end
  std::uint64_t expected = 0;           // (session, message) pairs owed
  std::uint64_t delivered = 0;          // of those, received
  std::uint64_t lost = 0;               // owed, not received, not announced
  std::uint64_t announced_missing = 0;  // owed, not received, before a recovered:false
  std::uint64_t delivered_refused = 0;  // received though the publish was refused

  void add(const ledger_totals& o);
};

class delivery_ledger {
 public:
  explicit delivery_ledger(std::uint64_t users) : users_(users) {}

  /// Message `seq` was due (ns since the start) in a request just sent.
  void sent(std::uint64_t seq, std::int64_t due);
  void published(std::uint64_t seq) { set(seq, state::published); }
  void refused(std::uint64_t seq) { set(seq, state::refused); }

  std::uint64_t users() const { return users_; }
  std::uint64_t messages() const { return due_.size(); }
  bool is_published(std::uint64_t seq) const {
    return seq < state_.size() && state_[seq] == state::published;
  }
  std::int64_t due(std::uint64_t seq) const { return due_[seq]; }
  /// The counts over messages (published, refused, unknown).
  ledger_totals message_totals() const;
  /// Adds one session's account to `t`: what it was owed, received, lost.
  void account(const session_verifier& s, ledger_totals& t) const;

 private:
  enum class state : std::uint8_t { unknown, published, refused };
  void set(std::uint64_t seq, state s);
  std::uint64_t users_;
  std::vector<std::int64_t> due_;
  std::vector<state> state_;
};

}  // namespace pushonce::bench
