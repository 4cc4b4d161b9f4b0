#include "core/names.hpp"

namespace pushonce {
namespace {

bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '@' || c == '-';
}

std::string_view strip_zeros(std::string_view s) {
  while (s.size() > 1 && s.front() == '0') s.remove_prefix(1);
  return s;
}

}  // namespace

bool valid_name(std::string_view name) {
  if (name.empty() || name.size() > 128) return false;
  for (char c : name)
    if (!name_char(c)) return false;
  return true;
}

int compare_ids(std::string_view a, std::string_view b) {
  a = strip_zeros(a);
  b = strip_zeros(b);
  if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
  int c = a.compare(b);
  return c < 0 ? -1 : (c > 0 ? 1 : 0);
}

}  // namespace pushonce
