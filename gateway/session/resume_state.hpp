#pragma once
// Resume bookkeeping of one session (docs/protocol.md "Guarantees"): no gap and no duplicate
// between the inbox replay and the live stream. Plain logic, no sockets, no Redis.
//
// The rule: offset k+1 is never sent before k. A catch-up reads the inbox after
// last_sent(); while it runs, live frames are buffered. Replayed frames are sent in order,
// then the buffered ones in offset order, each only when it is the next offset. In the live
// phase a frame whose offset skips one (a message lost by Pub/Sub) starts a new catch-up.
// Frames without an offset (state frames such as position updates) always pass, in arrival
// order.
//
// A gap that cannot be filled makes the session lost(): the caller closes it (1013), the
// client resumes and its welcome says recovered:false. It is unfillable when the inbox read
// of a catch-up starts past the next offset (trimmed: its first entry is beyond
// last_sent() + 1), or when a buffered frame heard before the read began is still not
// reached once the read ended (the inbox held it then, and everything before it unless
// trimmed). A hole before a frame heard after the read began may be a message the read
// could not see yet: the catch-up stays open for one more pass.
//
// Offsets going back (docs/operations.md "Failover semantics"): a promoted replica may lack
// the user's last deliveries, so its offset counter hands out offsets this session already
// sent, now for other messages. The ids of the last offsets sent are remembered; a frame
// whose offset was already sent with another id means the offsets went back (regressed):
// the session must end (1013) after the epoch is rotated, so the client re-syncs. A frame
// with an offset already sent under the same id is a plain duplicate (e.g. the outbox
// re-drove a delivery the failover lost, and it got its old offset again).

#include <array>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pushonce::gateway {

/// Where a new session starts reading the inbox, and whether it can honour the request.
struct resume_plan {
  long long start = 0;    // replay offsets > start
  bool recovered = true;  // false: different epoch or a start beyond the latest offset
};

/// since: the client's {epoch, offset} if given; epoch/latest/acked: from session.lua.
resume_plan plan_resume(const std::optional<std::pair<std::string, long long>>& since,
                        std::string_view epoch, long long latest, long long acked);

/// The "offset" of a message frame rendered by the worker
/// ({"type":"message","id":"ID","offset":N,...}); std::nullopt for frames without one.
std::optional<long long> frame_offset(std::string_view frame);
/// The "id" of a message frame (the digits, without quotes); empty for frames without one.
std::string_view frame_id(std::string_view frame);

/// What the first inbox page read at hello means for the welcome.
struct welcome_plan {
  bool recovered = true;  // false: the plan said so, or offsets after its start are gone
  long long skip_to = 0;  // offsets <= skip_to count as sent (lost ones the welcome owns up to)
};

/// plan: from plan_resume; latest: the offset counter at session.lua; first: the offset of
/// the first entry of the inbox after plan.start (std::nullopt: the read was empty).
welcome_plan plan_welcome(const resume_plan& plan, long long latest,
                          std::optional<long long> first);

/// The user's meta hash read again during a session (a catch-up after a reconnect): true
/// when the session cannot go on in its offsets: the epoch was rotated meanwhile, or the
/// stored offset counter is behind what the session already sent.
bool offsets_went_back(std::string_view session_epoch, long long last_sent,
                       std::string_view stored_epoch, long long stored_latest);

class resume_state {
 public:
  using frame_ptr = std::shared_ptr<const std::string>;

  struct limits {
    std::size_t max_buffered_frames = 4096;
    std::size_t max_buffered_bytes = 8u << 20;
  };

  enum class live_result {
    send,       // send it now
    drop,       // already sent (offset <= last sent)
    buffered,   // a catch-up runs: kept until finish_catch_up()
    gap,        // offsets skipped: buffered, and a catch-up must be started
    overflow,   // the buffer is over its limits: the session must be closed (1013)
    regressed,  // an offset already sent came with another id: offsets went back (1013)
  };

  resume_state() : resume_state(limits{}) {}
  explicit resume_state(limits l) : limits_(l) {}

  /// The first catch-up of a session: offsets <= start count as sent.
  void begin(long long start);
  /// Offsets <= offset are gone and the client was told (welcome recovered:false).
  void skip_to(long long offset);
  /// A catch-up pass (reconnect, gap) is about to read the inbox after last_sent(): the
  /// frames buffered so far are known to be in the inbox. Idempotent.
  void begin_catch_up();

  bool catching_up() const { return catching_up_; }
  long long last_sent() const { return last_sent_; }
  std::size_t buffered() const { return buffer_.size(); }

  /// A frame from the user channel.
  live_result on_live(const frame_ptr& f);
  /// A frame read from the inbox with its offset (in increasing order) and id (frame_id;
  /// empty: unknown): true when it is to be sent (and it then counts as sent). An offset
  /// past last_sent() + 1 sets lost().
  bool on_replay(long long offset, std::string_view id = {});
  /// Ends the catch-up pass; returns the buffered frames to send, in offset order, up to the
  /// first hole. With a hole left the state stays catching_up(): one more pass is needed
  /// (or, when the hole cannot be filled, lost() is set). A buffered frame that shows the
  /// offsets went back sets regressed().
  std::vector<frame_ptr> finish_catch_up();
  /// Offsets went back (a live or buffered frame was `regressed`); stays set.
  bool regressed() const { return regressed_; }
  /// A gap that cannot be filled: nothing more is sent; the session must be closed (1013).
  /// Stays set.
  bool lost() const { return lost_; }

 private:
  limits limits_;
  bool catching_up_ = false;
  /// `off` (<= last sent) came with `id`: true when that offset was sent with another id.
  bool went_back(long long off, std::string_view id);
  void note_sent(long long off, std::string_view id);

  static constexpr std::size_t remembered_ids = 64;  // offsets whose ids are kept
  // (offset, hash of the id; 0: unknown) by offset % remembered_ids; allocated with the
  // first message sent, so idle sessions pay nothing.
  using sent_ring = std::array<std::pair<long long, std::size_t>, remembered_ids>;

  bool regressed_ = false;
  bool lost_ = false;
  long long last_sent_ = 0;
  long long known_ = 0;  // the highest buffered offset heard before the pass's read began
  std::unique_ptr<sent_ring> sent_ids_;
  std::vector<frame_ptr> buffer_;
  std::size_t buffer_bytes_ = 0;
};

}  // namespace pushonce::gateway
