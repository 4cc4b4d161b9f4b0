#include "gateway/auth/revocations.hpp"

#include <charconv>
#include <chrono>

namespace pushonce::gateway {

namespace {
std::optional<long long> revocation_number(std::string_view s) {
  long long v = 0;
  if (s.empty() || s.size() > 18) return std::nullopt;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || p != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}
}  // namespace

bool refused_by(const revocation& r, const identity& who, long long now_ms) {
  if (now_ms >= r.until_ms) return false;
  if (!who.iat) return true;
  return *who.iat <= r.at_ms / 1000;
}

std::optional<control_message> parse_control_message(std::string_view payload) {
  if (payload.size() < 3 || payload[1] != ' ') return std::nullopt;
  auto rest = payload.substr(2);
  if (payload[0] == 'd') return control_message{std::string(rest), std::nullopt};
  if (payload[0] != 'r') return std::nullopt;
  auto sp1 = rest.find(' ');
  if (sp1 == std::string_view::npos) return std::nullopt;
  auto sp2 = rest.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || sp2 + 1 >= rest.size()) return std::nullopt;
  auto at = revocation_number(rest.substr(0, sp1));
  auto until = revocation_number(rest.substr(sp1 + 1, sp2 - sp1 - 1));
  if (!at || !until) return std::nullopt;
  return control_message{std::string(rest.substr(sp2 + 1)), revocation{*at, *until}};
}

std::string format_control_message(const control_message& m) {
  if (!m.revoked) return "d " + m.user;
  return "r " + std::to_string(m.revoked->at_ms) + " " + std::to_string(m.revoked->until_ms) + " " +
         m.user;
}

bool revocations::apply(const std::string& user, const revocation& r) {
  std::lock_guard lock(mutex_);
  auto [it, added] = by_user_.try_emplace(user, r);
  if (added) return true;
  const bool later = r.at_ms > it->second.at_ms;
  it->second.at_ms = std::max(it->second.at_ms, r.at_ms);
  it->second.until_ms = std::max(it->second.until_ms, r.until_ms);
  return later;
}

std::vector<std::string> revocations::load(
    const std::vector<std::pair<std::string, revocation>>& snapshot, long long now_ms) {
  std::vector<std::string> taught;
  for (const auto& [user, r] : snapshot)
    if (r.until_ms > now_ms && apply(user, r)) taught.push_back(user);
  prune(now_ms);
  std::lock_guard lock(mutex_);
  loaded_ = true;
  return taught;
}

bool revocations::loaded() const {
  std::lock_guard lock(mutex_);
  return loaded_;
}

bool revocations::revoked(const identity& who, long long now_ms) const {
  std::lock_guard lock(mutex_);
  if (by_user_.empty()) return false;
  auto it = by_user_.find(who.user);
  return it != by_user_.end() && refused_by(it->second, who, now_ms);
}

bool revocations::revoked(const identity& who) const {
  auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                 std::chrono::system_clock::now().time_since_epoch())
                 .count();
  return revoked(who, now);
}

std::size_t revocations::prune(long long now_ms) {
  std::lock_guard lock(mutex_);
  std::erase_if(by_user_, [now_ms](const auto& e) { return e.second.until_ms <= now_ms; });
  return by_user_.size();
}

std::size_t revocations::size() const {
  std::lock_guard lock(mutex_);
  return by_user_.size();
}

std::vector<std::pair<std::string, revocation>> parse_revocation_fields(
    const std::vector<std::pair<std::string, std::string>>& fields) {
  std::vector<std::pair<std::string, revocation>> out;
  out.reserve(fields.size());
  for (const auto& [user, value] : fields) {
    auto colon = value.find(':');
    if (colon == std::string::npos || user.empty()) continue;
    auto at = revocation_number(std::string_view(value).substr(0, colon));
    auto until = revocation_number(std::string_view(value).substr(colon + 1));
    if (!at || !until) continue;
    out.emplace_back(user, revocation{*at, *until});
  }
  return out;
}

}  // namespace pushonce::gateway
