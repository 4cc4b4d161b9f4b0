#include "core/redis/reply.hpp"

#include <charconv>

namespace pushonce::redis {

std::optional<long long> reply::as_int() const {
  if (kind == type::integer) return integer;
  if (kind != type::string && kind != type::status) return std::nullopt;
  std::string_view s = str;
  if (s.empty()) return std::nullopt;
  std::string_view digits = s.front() == '-' ? s.substr(1) : s;
  if (digits.empty()) return std::nullopt;
  for (char c : digits)
    if (c < '0' || c > '9') return std::nullopt;
  long long value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc{} || end != s.data() + s.size()) return std::nullopt;
  return value;
}

std::string_view reply::error_code() const {
  if (kind != type::error) return {};
  std::string_view s = str;
  return s.substr(0, s.find(' '));
}

std::string_view reply::error_message() const {
  if (kind != type::error) return {};
  std::string_view s = str;
  auto space = s.find(' ');
  if (space == std::string_view::npos) return {};
  s.remove_prefix(space + 1);
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  return s;
}

const reply& reply::at(std::size_t i) const {
  static const reply nil_reply;
  if (kind != type::array || i >= elements.size()) return nil_reply;
  return elements[i];
}

const reply& reply::field(std::string_view name) const {
  for (std::size_t i = 0; i + 1 < elements.size(); i += 2)
    if (elements[i].str == name) return elements[i + 1];
  return at(elements.size());
}

reply reply::make_error(std::string text) {
  reply r;
  r.kind = type::error;
  r.str = std::move(text);
  return r;
}

}  // namespace pushonce::redis
