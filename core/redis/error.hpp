#pragma once
// Transport-level errors of the Redis client. A Redis error *reply* (-ERR ...) is not an
// error_code: it arrives as a reply whose kind is type::error.

#include <system_error>

namespace pushonce::redis {

enum class error {
  timeout = 1,    // no reply within the command timeout
  disconnected,   // the connection dropped while the command was in flight
  protocol,       // the server sent something the RESP parser rejected
  queue_full,     // too many commands waiting for a connection
  stopped,        // the client was stopped
  refused,        // Redis refused the login commands for now (BUSY, LOADING, OOM, ...)
  moved,          // a sharded channel's slot is served by another node (MOVED, sunsubscribe)
  not_master,     // Sentinel: the server the sentinels named does not answer ROLE as a master
  login_refused,  // Redis answered the login (AUTH, SELECT) with an error: wrong password,
                  // user or database; retrying does not help until the setting is fixed
};

const std::error_category& error_category();
std::error_code make_error_code(error e);

}  // namespace pushonce::redis

template <>
struct std::is_error_code_enum<pushonce::redis::error> : std::true_type {};
