#pragma once
// `pushonce-leader run` (leader/main.cpp dispatches): runs the leader daemon until
// SIGTERM/SIGINT or a queue conflict; returns the exit code.

#include "core/config.hpp"

namespace pushonce::leader {

int run_daemon(command_line& cl);

}  // namespace pushonce::leader
