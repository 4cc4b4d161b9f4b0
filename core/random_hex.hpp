#pragma once
// Random identifiers that need to be unique, not secret (a session's id, an epoch, a claim
// record's epoch): hex digits from a per-thread Mersenne Twister seeded from
// std::random_device. Secrets use random_hex_secure (core/pow_challenge.hpp: OpenSSL).

#include <cstddef>
#include <string>

namespace pushonce {

/// `chars` hex digits.
std::string random_hex(std::size_t chars);

}  // namespace pushonce
