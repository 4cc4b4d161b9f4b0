#pragma once
// Bounds the scripts put on their arguments, shared by the programs that check input before
// it reaches a script (lua/lib/prelude.lua is the other side of each).

namespace pushonce::lua {

/// The largest integer argument `uint()` in lua/lib/prelude.lua accepts (at most 15 decimal
/// digits: exact in Lua's doubles). An offset a client sends (`since.offset`, `ack`) above
/// this is refused by the gateway as bad_request, never passed on to session.lua or ack.lua.
inline constexpr long long max_script_uint = 999'999'999'999'999;

}  // namespace pushonce::lua
