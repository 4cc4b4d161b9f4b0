#pragma once
// The bus message (docs/data-model.md): what assign.lua/publish.lua put in an outbox and
// on the bus (several per bus payload, one per line), and what a worker turns into the
// browser frame.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pushonce {

struct bus_message {
  std::string id;  // decimal digits, 1 to 2^53
  std::string user;
  std::string src;   // "q:QUEUE" | "bus:N"
  std::string tail;  // the frame after its offset: ,"kind":K,"data":D,"ts":T}
  std::string raw;   // the message text as received (for dead letters, replays)
  long long ts = 0;  // publish time (ms, Redis clock), the tail's "ts"
};

/// Parses one bus message; std::nullopt (and a reason) when it is not one. The layout the
/// scripts write, {"id":"ID","user":"U","src":"S","kind":...}, is read without a JSON
/// parse (the tail is its suffix from ,"kind"); anything else goes through Boost.JSON.
std::optional<bus_message> parse_bus_message(std::string_view text, std::string* why = nullptr);

/// The message as the scripts write it (the scan layout), published at `ts` instead: what a
/// dead-letter replay puts back on the bus, so that claim.lua takes it as a fresh message.
std::string with_publish_time(const bus_message& m, long long ts);

/// A bus payload: one message per line.
std::vector<std::string_view> split_bus_payload(std::string_view payload);

/// The browser frame of a message delivered at `offset` (what claim.lua writes).
std::string render_frame(const bus_message& m, long long offset);

}  // namespace pushonce
