#pragma once
// The waiting room's join refusals (docs/protocol.md "Refusals"): codes of the errc
// category (core/errc.hpp) with the contract's words "closed" and "full", answered by
// join.lua and shown as such by the CLI, the WebSocket error frame and the HTTP API.

#include "core/errc.hpp"

namespace pushonce {

inline constexpr errc errc_closed = static_cast<errc>(64);  // a join to a closed queue
inline constexpr errc errc_full = static_cast<errc>(65);    // a join over max_waiting

}  // namespace pushonce
