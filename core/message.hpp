#pragma once
// The bus message (docs/data-model.md): what assign.lua/publish.lua put in an outbox and
// on the bus, and what a worker turns into the browser frame.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace pushonce {

struct bus_message {
  std::string id;  // decimal digits
  std::string user;
  std::string kind;       // "assignment" | "expired" | "message"
  std::string data_json;  // the data value, serialised
  std::int64_t ts = 0;    // ms since the epoch
  std::string src;        // "q:QUEUE" | "bus:N"
  std::string raw;        // the message text as received (for dead letters, replays)
};

/// Parses a bus message; std::nullopt (and a reason) when it is not one.
std::optional<bus_message> parse_bus_message(std::string_view json, std::string* why = nullptr);

/// The frame a browser receives, split around the offset that only deliver.lua knows:
/// head = {"type":"message","id":"ID","offset":   tail = ,"kind":K,"data":D,"ts":T}
struct frame_parts {
  std::string head;
  std::string tail;
};
frame_parts render_frame(const bus_message& m);

}  // namespace pushonce
