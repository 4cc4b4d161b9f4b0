#include "core/redis/channel_routes.hpp"

#include "core/redis/hash_slot.hpp"

namespace pushonce::redis {

std::string channel_routes::owner(const slot_map& m, std::string_view channel) {
  const auto* a = m.owner(hash_slot(channel));
  return a ? a->key() : std::string();
}

bool channel_routes::want(const std::string& ch) {
  return where_.emplace(ch, std::string()).second;
}

std::string channel_routes::drop(const std::string& ch) {
  auto it = where_.find(ch);
  if (it == where_.end()) return {};
  auto node = std::move(it->second);
  where_.erase(it);
  return node;
}

std::string channel_routes::placed(const std::string& ch) const {
  auto it = where_.find(ch);
  return it == where_.end() ? std::string() : it->second;
}

void channel_routes::place(const std::string& ch, const std::string& node) {
  auto it = where_.find(ch);
  if (it != where_.end()) it->second = node;
}

bool channel_routes::unplace(const std::string& ch, const std::string& node) {
  auto it = where_.find(ch);
  if (it == where_.end() || it->second != node || node.empty()) return false;
  it->second.clear();
  return true;
}

std::vector<channel_routes::move> channel_routes::plan(const slot_map& m) const {
  std::vector<move> out;
  for (const auto& [ch, node] : where_) {
    auto to = owner(m, ch);
    if (to != node || node.empty()) out.push_back({ch, node, std::move(to)});
  }
  return out;
}

std::vector<std::string> channel_routes::on(const std::string& node) const {
  std::vector<std::string> out;
  if (node.empty()) return out;
  for (const auto& [ch, n] : where_)
    if (n == node) out.push_back(ch);
  return out;
}

std::size_t channel_routes::unplaced() const {
  std::size_t n = 0;
  for (const auto& [ch, node] : where_) n += node.empty();
  return n;
}

}  // namespace pushonce::redis
