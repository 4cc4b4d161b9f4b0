#pragma once
// The waiting room's join refusals (docs/protocol.md "Refusals"): codes of the errc
// category (core/errc.hpp) with the contract's words "closed" and "full", answered by
// join.lua and shown as such by the CLI, the WebSocket error frame and the HTTP API.

#include "core/errc.hpp"

namespace pushonce {

inline constexpr errc errc_closed = static_cast<errc>(64);  // a join to a closed queue
inline constexpr errc errc_full = static_cast<errc>(65);    // a join over max_waiting
// A renewal of an admission that has ended (docs/capacity.md): 409 with these words.
inline constexpr errc errc_expired = static_cast<errc>(66);   // its offer or lease ran out
inline constexpr errc errc_released = static_cast<errc>(67);  // released or revoked

}  // namespace pushonce
