#include "core/admission_plan.hpp"

#include <algorithm>
#include <charconv>

namespace pushonce::admission {

namespace {

bool plan_decimal(std::string_view s, long long& out) {
  if (s.empty() || s.size() > 18) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size() && out >= 0;
}

}  // namespace

std::optional<assign_plan> plan_of_reply(const std::vector<std::string>& items) {
  if (items.size() < 2 || items.size() % 2 != 0) return std::nullopt;
  assign_plan p;
  long long seq = 0;
  if (!plan_decimal(items[0], seq) || !plan_decimal(items[1], p.stale)) return std::nullopt;
  p.seq = items[0];
  for (std::size_t i = 2; i + 1 < items.size(); i += 2)
    p.pairs.emplace_back(items[i], items[i + 1]);
  return p;
}

std::string planned_id(const assign_plan& plan, std::size_t i, long long source) {
  long long seq = 0;
  plan_decimal(plan.seq, seq);
  return std::to_string((seq + static_cast<long long>(i) + 1) * 4096 + source);
}

std::vector<std::string> plan_args(const assign_plan& plan,
                                   const std::vector<std::string>& tokens) {
  std::vector<std::string> out{std::to_string(plan.pairs.size()), plan.seq};
  out.reserve(2 + 3 * plan.pairs.size());
  for (std::size_t i = 0; i < plan.pairs.size(); ++i) {
    out.push_back(plan.pairs[i].first);
    out.push_back(plan.pairs[i].second);
    out.push_back(i < tokens.size() ? tokens[i] : std::string());
  }
  return out;
}

std::vector<assign_plan> split_plan(const assign_plan& plan, std::size_t batch) {
  std::vector<assign_plan> out;
  if (batch == 0) batch = 1;
  long long seq = 0;
  plan_decimal(plan.seq, seq);
  std::size_t at = 0;
  do {
    assign_plan part;
    part.seq = std::to_string(seq + static_cast<long long>(at));
    part.stale = out.empty() ? plan.stale : 0;
    auto end = std::min(plan.pairs.size(), at + batch);
    part.pairs.assign(plan.pairs.begin() + static_cast<std::ptrdiff_t>(at),
                      plan.pairs.begin() + static_cast<std::ptrdiff_t>(end));
    at = end;
    out.push_back(std::move(part));
  } while (at < plan.pairs.size() && plan.stale == 0);
  return out;
}

std::optional<record> record_of(std::string_view text) {
  auto a = text.find(' ');
  if (a == std::string_view::npos) return std::nullopt;
  auto b = text.find(' ', a + 1);
  if (b == std::string_view::npos) return std::nullopt;
  record r{std::string(text.substr(0, a)), std::string(text.substr(a + 1, b - a - 1)),
           std::string(text.substr(b + 1))};
  if (r.state.empty() || r.user.empty() || r.resource.empty()) return std::nullopt;
  return r;
}

long long source_of_id(std::string_view id) {
  long long n = 0;
  if (!plan_decimal(id, n)) return -1;
  return n % 4096;
}

bool is_pass_name(std::string_view resource) {
  constexpr std::string_view prefix = "pass:";
  if (resource.size() <= prefix.size() || resource.size() > 40 ||
      resource.substr(0, prefix.size()) != prefix)
    return false;
  for (char c : resource.substr(prefix.size()))
    if (c < '0' || c > '9') return false;
  return true;
}

}  // namespace pushonce::admission
