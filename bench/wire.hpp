#pragma once
// The frames and bodies pushonce-bench reads and writes (docs/protocol.md): the gateway's
// WebSocket frames, the hello, the publish request and its answer. A run's message carries
// {"s":SEQ,"t":DUE} as its data: its sequence number and when it was due (ns since the
// run's start, in this process's monotonic clock), so latency is measured on one clock.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pushonce::bench {

struct server_frame {
  enum class kind { welcome, message, error, other, bad } type = kind::bad;
  // welcome
  std::string epoch;
  bool recovered = true;
  // welcome (the user's offset) and message (its offset)
  std::int64_t offset = -1;
  // message: the run's data; seq -1 when the data is not a message of a run
  std::int64_t seq = -1;
  std::int64_t due = 0;
  std::string run;      // the data's "r": which run published it
  std::int64_t ts = 0;  // when the system accepted it, ms since the epoch (its clock)
  // error
  std::string code;
};

/// One frame from the gateway; kind::bad for anything that is not a JSON object.
server_frame parse_frame(std::string_view text);

/// The hello: dev auth ({"user"}) or a token, with `since` when resuming.
std::string hello_frame(std::string_view user, std::string_view token, const std::string* epoch,
                        std::int64_t offset);

/// The body of one POST /api/publish: messages first..first+count-1, message k to user
/// prefix+(k mod users), data {"r":run,"s":k,"t":due}, with `keys` the idempotency key run-k
/// (a retry of the request publishes nothing twice).
std::string publish_body(std::string_view prefix, std::string_view run, std::uint64_t users,
                         std::uint64_t first, std::uint64_t count, std::int64_t due,
                         bool keys = true);

/// What a 200 answer to a batch says: one entry per message, true when it was accepted
/// (an id, duplicate or not); std::nullopt when the body is not a batch answer of `count`.
std::optional<std::vector<bool>> parse_publish_reply(std::string_view body, std::uint64_t count);

/// A user's name in a run.
std::string user_name(std::string_view prefix, std::uint64_t user);

}  // namespace pushonce::bench
