#include "gateway/http/queue_control.hpp"

#include <array>
#include <boost/json.hpp>

#include "core/names.hpp"

namespace pushonce::gateway {

namespace json = boost::json;

namespace {

failure control_refusal(std::string why) {
  return {errc::bad_request, std::move(why)};
}

// A whole number >= 0 in field `name`, when present.
std::optional<std::optional<long long>> control_number(const json::object& o, const char* name) {
  auto* v = o.if_contains(name);
  if (!v) return std::optional<long long>{};
  if (v->is_int64()) return std::optional<long long>{v->as_int64()};
  if (v->is_uint64() && v->as_uint64() < (1ULL << 62))
    return std::optional<long long>{static_cast<long long>(v->as_uint64())};
  return std::nullopt;
}

}  // namespace

outcome<lua::settings_call> parse_queue_control(std::string_view body, long long now_ms) {
  boost::system::error_code ec;
  auto v = json::parse(body, ec);
  if (ec || !v.is_object()) return control_refusal("the body must be a JSON object");
  const auto& o = v.as_object();
  auto* q = o.if_contains("queue");
  auto* a = o.if_contains("action");
  if (!q || !q->is_string() || !valid_name(q->as_string()))
    return control_refusal("\"queue\" must be a queue name");
  if (!a || !a->is_string()) return control_refusal("\"action\" must be a string");
  lua::settings_call c;
  c.queue = std::string(q->as_string());
  std::string_view action = a->as_string();
  constexpr std::array<const char*, 10> value_names{
      "max_waiting", "abandon_after_s", "accept_timeout_s", "join_pow_bits", "rate_per_min",
      "burst",       "max_active",      "session_s",        "passes",        "session_renewal"};
  bool has_values = false;
  for (const char* name : value_names) has_values |= o.contains(name);
  if (action != "settings" && has_values)
    return control_refusal(
        "max_waiting, abandon_after_s, accept_timeout_s, join_pow_bits, rate_per_min, burst, "
        "max_active, session_s, passes, session_renewal go with settings");
  if (action != "open" && (o.contains("at") || o.contains("shuffle")))
    return control_refusal("at and shuffle go with open");
  if (action == "settings") {
    settings_values values;
    auto mw = control_number(o, "max_waiting");
    auto ab = control_number(o, "abandon_after_s");
    auto at = control_number(o, "accept_timeout_s");
    auto pow = control_number(o, "join_pow_bits");
    auto rate = control_number(o, "rate_per_min");
    auto burst = control_number(o, "burst");
    auto cap = control_number(o, "max_active");
    auto session = control_number(o, "session_s");
    if (!mw || !ab || !at || !pow || !rate || !burst || !cap || !session)
      return control_refusal("settings values must be whole numbers");
    values.max_waiting = *mw;
    values.abandon_after_s = *ab;
    values.accept_timeout_s = *at;
    values.join_pow_bits = *pow;
    values.rate_per_min = *rate;
    values.burst = *burst;
    values.max_active = *cap;
    values.session_s = *session;
    for (auto [name, field] : {std::pair{"passes", &settings_values::passes},
                               std::pair{"session_renewal", &settings_values::session_renewal}}) {
      auto* b = o.if_contains(name);
      if (!b) continue;
      if (!b->is_bool())
        return control_refusal(std::string("\"") + name + "\" must be true or false");
      values.*field = b->as_bool();
    }
    if (auto why = settings_problem(values)) return control_refusal(*why);
    c.fields = settings_fields(values);
    c.op = c.fields.empty() ? lua::settings_op::get : lua::settings_op::set;
  } else if (action == "pause") {
    c.op = lua::settings_op::pause;
  } else if (action == "resume") {
    c.op = lua::settings_op::resume;
  } else if (action == "close") {
    c.op = lua::settings_op::close;
  } else if (action == "open") {
    c.op = lua::settings_op::open;
    if (auto* s = o.if_contains("shuffle")) {
      if (!s->is_bool()) return control_refusal("\"shuffle\" must be true or false");
      c.shuffle = s->as_bool();
    }
    if (auto* t = o.if_contains("at"); t && !t->is_null()) {
      std::optional<long long> when;
      if (t->is_string()) when = parse_open_time(t->as_string());
      if (t->is_int64()) when = t->as_int64();
      if (!when) return control_refusal("\"at\": ms since the epoch or an RFC 3339 time");
      if (*when <= now_ms) return control_refusal("\"at\": the opening time must be in the future");
      c.opens_at = when;
    }
  } else {
    return control_refusal("unknown action (settings, pause, resume, close, open)");
  }
  return c;
}

}  // namespace pushonce::gateway
