#pragma once
// Redis Cluster's key-to-slot function (the cluster spec): CRC16-CCITT (XModem) of the key,
// or of its hash tag — the part between the first '{' and the next '}' when that part is
// not empty — modulo 16384. Pure functions.

#include <cstdint>
#include <string_view>

namespace pushonce::redis {

inline constexpr unsigned slot_count = 16384;

/// CRC16-CCITT, polynomial 0x1021, initial value 0 (XModem): "123456789" -> 0x31C3.
std::uint16_t crc16(std::string_view data);

/// The part of `key` that is hashed: its hash tag when it has a non-empty one, else the key.
std::string_view hash_tag(std::string_view key);

/// The cluster slot of a key, 0 to 16383.
unsigned hash_slot(std::string_view key);

}  // namespace pushonce::redis
