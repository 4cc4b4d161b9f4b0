#include "core/lua/settings.hpp"

namespace pushonce::lua {

namespace {
const char* settings_op_word(settings_op op) {
  switch (op) {
    case settings_op::set:
      return "set";
    case settings_op::pause:
      return "pause";
    case settings_op::resume:
      return "resume";
    case settings_op::close:
      return "close";
    case settings_op::open:
      return "open";
    case settings_op::get:
      break;
  }
  return "get";
}
}  // namespace

settings_inputs settings_for(const keys& k, const settings_call& c) {
  settings_inputs in{.settings = k.queue(c.queue, "settings"),
                     .registered = k.queue(c.queue, "registered"),
                     .prequeue = k.queue(c.queue, "prequeue"),
                     .assigned = k.queue(c.queue, "assigned"),
                     .queue = c.queue,
                     .wake = k.wake_channel(),
                     .what = settings_op_word(c.op),
                     .at = c.opens_at ? std::to_string(*c.opens_at) : "",
                     .shuffle = c.shuffle ? "1" : "0",
                     .more_args = {}};
  for (const auto& [f, v] : c.fields) {
    in.more_args.push_back(f);
    in.more_args.push_back(v);
  }
  return in;
}

std::optional<settings_reply> parse_settings_reply(const redis::reply& r) {
  if (!r.is_array() || r.elements.size() < 2 || r.elements.size() % 2 != 0) return std::nullopt;
  settings_reply out;
  out.default_accept_timeout_ms = registered_accept_timeout_ms(r.elements[0].str);
  out.prequeue_length = r.elements[1].integer;
  std::vector<std::pair<std::string, std::string>> fields;
  for (std::size_t i = 2; i + 1 < r.elements.size(); i += 2)
    fields.emplace_back(r.elements[i].str, r.elements[i + 1].str);
  out.settings = parse_queue_settings(fields);
  return out;
}

}  // namespace pushonce::lua
