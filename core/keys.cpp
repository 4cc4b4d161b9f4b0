#include "core/keys.hpp"

#include <charconv>
#include <cstdint>
#include <stdexcept>

#include "core/redis/hash_slot.hpp"

namespace pushonce {
namespace {

// CRC-32/IEEE (reflected, polynomial 0xEDB88320), bitwise: names are short.
std::uint32_t crc32(std::string_view data) {
  std::uint32_t crc = 0xFFFFFFFFu;
  for (unsigned char byte : data) {
    crc ^= byte;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

std::string tagged(const std::string& ns, std::string_view kind, std::string_view name,
                   std::string_view suffix) {
  std::string key;
  key.reserve(ns.size() + kind.size() + name.size() + suffix.size() + 5);
  key += ns;
  key += ":{";
  key += kind;
  key += ':';
  key += name;
  key += '}';
  if (!suffix.empty()) {
    key += ':';
    key += suffix;
  }
  return key;
}

std::string bus_tag_for(unsigned shard, unsigned shards) {
  const unsigned from = shard * redis::slot_count / shards;
  const unsigned to = (shard + 1) * redis::slot_count / shards;
  std::string tag = "bus:" + std::to_string(shard);
  auto fits = [&](const std::string& t) {
    unsigned slot = redis::crc16(t) % redis::slot_count;
    return slot >= from && slot < to;
  };
  if (fits(tag)) return tag;
  // A range holds 1/shards of the slots: a suffix fits after ~shards tries on average.
  for (unsigned k = 1;; ++k) {
    std::string t = tag + ":" + std::to_string(k);
    if (fits(t)) return t;
  }
}

}  // namespace

keys::keys(std::string ns, unsigned shards) : ns_(std::move(ns)) {
  if (shards == 0) throw std::invalid_argument("keys: at least one bus shard");
  tags_.reserve(shards);
  for (unsigned n = 0; n < shards; ++n) tags_.push_back(bus_tag_for(n, shards));
}

std::string keys::queue(std::string_view q, std::string_view suffix) const {
  return tagged(ns_, "q", q, suffix);
}

std::string keys::user(std::string_view u, std::string_view suffix) const {
  std::string rest = "u:";
  rest += u;
  if (!suffix.empty()) {
    rest += ':';
    rest += suffix;
  }
  return bus(shard_of(u), rest);
}

std::string keys::batch(std::string_view first_id) const {
  std::string suffix = "b:";
  suffix += first_id;
  return plain(suffix);
}

std::string keys::claim(std::string_view u, std::string_view id) const {
  std::string suffix = "c:";
  suffix += id;
  return user(u, suffix);
}

std::string keys::claim_bucket(std::string_view u, std::string_view id) const {
  return claim_bucket_in(shard_of(u), id);
}

std::string keys::claim_bucket_in(unsigned shard, std::string_view id) const {
  std::uint64_t n = 0;
  auto [end, ec] = std::from_chars(id.data(), id.data() + id.size(), n);
  if (ec != std::errc() || end != id.data() + id.size()) n = 0;
  std::string suffix = "c:";
  suffix += std::to_string(n % 4096);
  suffix += ':';
  suffix += std::to_string(n / 524288);
  return bus(shard, suffix);
}

std::string keys::user_channel(std::string_view u) const {
  return user(u, "ch");
}

std::string keys::bus(unsigned shard, std::string_view suffix) const {
  const auto& tag = tags_.at(shard);
  std::string key;
  key.reserve(ns_.size() + tag.size() + suffix.size() + 4);
  key += ns_;
  key += ":{";
  key += tag;
  key += '}';
  if (!suffix.empty()) {
    key += ':';
    key += suffix;
  }
  return key;
}

std::string keys::idem(unsigned shard, std::string_view user, std::string_view key) const {
  std::string suffix = "idem:";
  suffix += user;
  suffix += ':';
  suffix += key;
  return bus(shard, suffix);
}

unsigned keys::shard_of(std::string_view user, unsigned shards) {
  if (shards <= 1) return 0;
  return static_cast<unsigned>(crc32(user) % shards);
}

std::string keys::plain(std::string_view suffix) const {
  std::string key = ns_;
  key += ':';
  key += suffix;
  return key;
}

}  // namespace pushonce
