#include "core/queue_settings.hpp"

#include <boost/json.hpp>
#include <charconv>

namespace pushonce {

namespace json = boost::json;

namespace {

std::optional<long long> settings_number(std::string_view s) {
  long long v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || p != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

// Days from 1970-01-01 to y-m-d (proleptic Gregorian; Howard Hinnant's days_from_civil).
long long days_from_civil(long long y, unsigned m, unsigned d) {
  y -= m <= 2;
  const long long era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<long long>(doe) - 719468;
}

// `n` decimal digits of `s` from `at`, or -1.
long long rfc3339_digits(std::string_view s, std::size_t at, std::size_t n) {
  if (at + n > s.size()) return -1;
  long long v = 0;
  for (std::size_t i = at; i < at + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return -1;
    v = v * 10 + (s[i] - '0');
  }
  return v;
}

}  // namespace

queue_settings parse_queue_settings(
    const std::vector<std::pair<std::string, std::string>>& fields) {
  queue_settings s;
  for (const auto& [name, value] : fields) {
    if (name == "state") {
      if (value == "closed") s.state = queue_settings::state_kind::closed;
      if (value == "prequeue") s.state = queue_settings::state_kind::prequeue;
    } else if (name == "paused") {
      s.paused = value == "1";
    } else if (name == "shuffle") {
      s.shuffle = value == "1";
    } else if (name == "passes") {
      s.passes = value != "0";
    } else if (name == "session_renewal") {
      s.session_renewal = value != "0";
    } else if (auto v = settings_number(value)) {
      if (name == "opens_at") s.opens_at = *v;
      if (name == "max_waiting") s.max_waiting = *v;
      if (name == "abandon_after_s") s.abandon_after_s = *v;
      if (name == "accept_timeout_s") s.accept_timeout_s = *v;
      if (name == "join_pow_bits") s.join_pow_bits = *v;
      if (name == "rate_per_min") s.rate_per_min = *v;
      if (name == "burst") s.burst = *v;
      if (name == "max_active") s.max_active = *v;
      if (name == "session_s") s.session_s = *v;
      if (name == "active") s.active = *v;
    }
  }
  if (s.state != queue_settings::state_kind::prequeue) s.opens_at.reset();
  return s;
}

std::string_view state_text(queue_settings::state_kind s) {
  switch (s) {
    case queue_settings::state_kind::closed:
      return "closed";
    case queue_settings::state_kind::prequeue:
      return "prequeue";
    case queue_settings::state_kind::open:
      break;
  }
  return "open";
}

json::object render_queue_settings(std::string_view queue, const queue_settings& s,
                                   long long default_accept_timeout_ms) {
  json::object o;
  o["queue"] = queue;
  o["state"] = state_text(s.state);
  o["paused"] = s.paused;
  o["opens_at"] = s.opens_at ? json::value(*s.opens_at) : json::value(nullptr);
  o["shuffle"] = s.shuffle;
  o["max_waiting"] = s.max_waiting > 0 ? json::value(s.max_waiting) : json::value(nullptr);
  o["abandon_after_s"] = s.abandon_after_s;
  if (s.accept_timeout_s)
    o["accept_timeout_s"] = *s.accept_timeout_s;
  else if (default_accept_timeout_ms % 1000 == 0)
    o["accept_timeout_s"] = default_accept_timeout_ms / 1000;
  else
    o["accept_timeout_s"] = static_cast<double>(default_accept_timeout_ms) / 1000.0;
  o["join_pow_bits"] = s.join_pow_bits;
  o["rate_per_min"] = s.rate_per_min;
  o["burst"] = s.burst;
  o["passes"] = s.passes;
  o["max_active"] = s.max_active;
  o["session_s"] = s.session_s;
  o["session_renewal"] = s.session_renewal;
  if (s.active) o["active"] = *s.active;
  return o;
}

long long registered_accept_timeout_ms(std::string_view registered) {
  constexpr std::string_view prefix = "accept_timeout_ms:";
  if (registered.substr(0, prefix.size()) != prefix) return 0;
  return settings_number(registered.substr(prefix.size())).value_or(0);
}

std::string registered_value(long long accept_timeout_ms) {
  return "accept_timeout_ms:" + std::to_string(accept_timeout_ms);
}

std::optional<std::string> settings_problem(const settings_values& v) {
  constexpr long long most = 1'000'000'000;
  auto bad = [&](const std::optional<long long>& x) { return x && (*x < 0 || *x > most); };
  if (bad(v.max_waiting)) return "--max-waiting must be 0 (no cap) to 1000000000";
  if (bad(v.abandon_after_s)) return "--abandon-after must be 0 (never) to 1000000000 seconds";
  if (bad(v.accept_timeout_s)) return "--accept-timeout must be 0 (never) to 1000000000 seconds";
  if (v.join_pow_bits && (*v.join_pow_bits < 0 || *v.join_pow_bits > 32))
    return "--join-pow-bits must be 0 (off) to 32";
  if (v.rate_per_min && (*v.rate_per_min < 0 || *v.rate_per_min > 60'000))
    return "--rate must be 0 (no pacing) to 60000 a minute";
  if (v.burst && (*v.burst < 0 || *v.burst > 1'000'000)) return "--burst must be 0 to 1000000";
  if (bad(v.max_active)) return "--max-active must be 0 (no cap) to 1000000000";
  if (v.session_s && (*v.session_s < 0 || *v.session_s > 86'400))
    return "--session must be 0 (no lease) to 86400 seconds (24 h)";
  return std::nullopt;
}

settings_change settings_fields(const settings_values& v) {
  settings_change out;
  if (v.max_waiting) out.emplace_back("max_waiting", std::to_string(*v.max_waiting));
  if (v.abandon_after_s) out.emplace_back("abandon_after_s", std::to_string(*v.abandon_after_s));
  if (v.accept_timeout_s) out.emplace_back("accept_timeout_s", std::to_string(*v.accept_timeout_s));
  if (v.join_pow_bits) out.emplace_back("join_pow_bits", std::to_string(*v.join_pow_bits));
  if (v.rate_per_min) out.emplace_back("rate_per_min", std::to_string(*v.rate_per_min));
  if (v.burst) out.emplace_back("burst", std::to_string(*v.burst));
  if (v.passes) out.emplace_back("passes", *v.passes ? "1" : "0");
  if (v.max_active) out.emplace_back("max_active", std::to_string(*v.max_active));
  if (v.session_s) out.emplace_back("session_s", std::to_string(*v.session_s));
  if (v.session_renewal) out.emplace_back("session_renewal", *v.session_renewal ? "1" : "0");
  return out;
}

std::optional<long long> parse_open_time(std::string_view t) {
  if (!t.empty() && t.find_first_not_of("0123456789") == std::string_view::npos) {
    if (t.size() > 15) return std::nullopt;
    return settings_number(t);
  }
  // YYYY-MM-DDTHH:MM:SS[.fff...](Z|+HH:MM|-HH:MM)
  if (t.size() < 20 || t[4] != '-' || t[7] != '-' ||
      (t[10] != 'T' && t[10] != 't' && t[10] != ' ') || t[13] != ':' || t[16] != ':')
    return std::nullopt;
  auto y = rfc3339_digits(t, 0, 4), mo = rfc3339_digits(t, 5, 2), d = rfc3339_digits(t, 8, 2);
  auto h = rfc3339_digits(t, 11, 2), mi = rfc3339_digits(t, 14, 2), s = rfc3339_digits(t, 17, 2);
  if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > 31 || h < 0 || h > 23 || mi < 0 || mi > 59 ||
      s < 0 || s > 60)
    return std::nullopt;
  std::size_t at = 19;
  long long ms = 0;
  if (at < t.size() && t[at] == '.') {
    std::size_t digits = 0;
    ++at;
    while (at < t.size() && t[at] >= '0' && t[at] <= '9') {
      if (digits < 3) ms = ms * 10 + (t[at] - '0');
      ++digits;
      ++at;
    }
    if (digits == 0) return std::nullopt;
    for (auto i = digits; i < 3; ++i) ms *= 10;
  }
  long long offset_min = 0;
  if (at < t.size() && (t[at] == 'Z' || t[at] == 'z')) {
    ++at;
  } else if (at < t.size() && (t[at] == '+' || t[at] == '-')) {
    auto oh = rfc3339_digits(t, at + 1, 2), om = rfc3339_digits(t, at + 4, 2);
    if (oh < 0 || om < 0 || at + 3 >= t.size() || t[at + 3] != ':' || oh > 23 || om > 59)
      return std::nullopt;
    offset_min = (oh * 60 + om) * (t[at] == '+' ? 1 : -1);
    at += 6;
  } else {
    return std::nullopt;
  }
  if (at != t.size()) return std::nullopt;
  auto days = days_from_civil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d));
  auto secs = days * 86400 + h * 3600 + mi * 60 + s - offset_min * 60;
  return secs * 1000 + ms;
}

}  // namespace pushonce
