#pragma once
// POST /api/queue-control (admin token): the admin dashboard's buttons for a queue's
// run-time settings, the same changes as `pushonce-leader settings|pause|resume|close|open`
// (docs/operations.md "Running a drop"). The body's meaning is decided here without
// sockets; the route runs the resulting lua/settings.lua call.
//
// Body: {"queue":"Q","action":"settings"|"pause"|"resume"|"close"|"open"}, with "at" (ms
// since the epoch or RFC 3339, in the future) and "shuffle" (bool) for open, and any of
// "max_waiting", "abandon_after_s", "accept_timeout_s" (whole numbers >= 0) for settings.
// The answer is the settings object.

#include <string_view>

#include "core/lua/settings.hpp"
#include "core/outcome.hpp"

namespace pushonce::gateway {

/// The settings.lua call a request body asks for, or bad_request with why.
outcome<lua::settings_call> parse_queue_control(std::string_view body, long long now_ms);

}  // namespace pushonce::gateway
