#include "core/redis/slot_map.hpp"

#include <fmt/format.h>

#include <charconv>

#include "core/redis/hash_slot.hpp"

namespace pushonce::redis {

std::string node_address::key() const {
  if (host.find(':') != std::string::npos) return fmt::format("[{}]:{}", host, port);
  return fmt::format("{}:{}", host, port);
}

std::optional<redirect> parse_redirect(const reply& r) {
  if (!r.is_error()) return std::nullopt;
  auto code = r.error_code();
  if (code != "MOVED" && code != "ASK") return std::nullopt;
  std::string_view rest = r.error_message();  // "3999 127.0.0.1:6381"
  auto space = rest.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  std::string_view slot_text = rest.substr(0, space), where = rest.substr(space + 1);
  auto colon = where.rfind(':');
  if (colon == std::string_view::npos) return std::nullopt;
  redirect out;
  out.ask = code == "ASK";
  std::string_view port_text = where.substr(colon + 1);
  auto [e1, ec1] = std::from_chars(slot_text.data(), slot_text.data() + slot_text.size(), out.slot);
  auto [e2, ec2] =
      std::from_chars(port_text.data(), port_text.data() + port_text.size(), out.to.port);
  if (ec1 != std::errc{} || ec2 != std::errc{} || out.slot >= slot_count || out.to.port == 0)
    return std::nullopt;
  std::string_view host = where.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  out.to.host = std::string(host);
  return out;
}

std::optional<slot_map> slot_map::parse(const reply& slots, const node_address& asked) {
  if (!slots.is_array()) return std::nullopt;
  slot_map m;
  m.owner_.assign(slot_count, none);
  for (const auto& range : slots.elements) {
    if (!range.is_array() || range.elements.size() < 3) return std::nullopt;
    auto first = range.at(0).as_int(), last = range.at(1).as_int();
    const reply& master = range.at(2);
    auto port = master.at(1).as_int();
    if (!first || !last || !port || *first < 0 || *last < *first ||
        *last >= static_cast<long long>(slot_count) || *port <= 0 || *port > 65535 ||
        !master.at(0).is_string())
      return std::nullopt;
    node_address a{master.at(0).str, static_cast<std::uint16_t>(*port)};
    if (a.host.empty() || a.host == "?") a.host = asked.host;
    auto idx = static_cast<std::uint16_t>(m.index_of(a));
    for (long long s = *first; s <= *last; ++s) m.owner_[static_cast<std::size_t>(s)] = idx;
  }
  return m;
}

std::size_t slot_map::index_of(const node_address& a) {
  for (std::size_t i = 0; i < masters_.size(); ++i)
    if (masters_[i] == a) return i;
  masters_.push_back(a);
  return masters_.size() - 1;
}

const node_address* slot_map::owner(unsigned slot) const {
  if (slot >= owner_.size() || owner_[slot] == none) return nullptr;
  return &masters_[owner_[slot]];
}

std::size_t slot_map::unserved() const {
  std::size_t n = 0;
  for (auto o : owner_) n += o == none;
  return n;
}

void slot_map::assign(unsigned slot, const node_address& to) {
  if (owner_.empty()) owner_.assign(slot_count, none);
  if (slot >= slot_count) return;
  owner_[slot] = static_cast<std::uint16_t>(index_of(to));
}

}  // namespace pushonce::redis
