#pragma once
// How big the read buffer of an HTTP connection is (no sockets here). Beast reads into a
// flat_buffer as much as its free capacity, and at least 512 bytes; a request parser that
// moves each read into the body leaves that capacity where it was, so a buffer that starts
// small reads a body 512 bytes a call (an 8 KB /api/publish batch took 16 reads, each with
// its own wait on the reactor). Before the body is read the buffer is made big enough for
// all of it, up to the most Beast reads in one call (body_read_chunk), so it arrives in as
// few reads as the client's writes; between requests a buffer grown past `kept_capacity` is
// given back, so an idle keep-alive connection holds little. (A client that announces a
// large body and sends it slowly costs at most body_read_chunk of buffer beyond the body
// Beast reserves for it.)

#include <cstddef>
#include <cstdint>
#include <optional>

namespace pushonce::gateway {

/// Largest read buffer an idle keep-alive connection keeps between requests.
inline constexpr std::size_t kept_capacity = 16 * 1024;
/// The most Beast's HTTP read asks of the socket in one call: more room is never used.
inline constexpr std::size_t body_read_chunk = 64 * 1024;

/// The capacity to reserve before the body is read: what is buffered plus the body still to
/// come (Content-Length, at most `limit`: body_read_chunk in the gateway), or plus
/// kept_capacity when the length is not known (chunked; at most `limit` too).
std::size_t body_read_capacity(std::size_t buffered, std::optional<std::uint64_t> content_length,
                               std::size_t limit);

/// Whether an empty buffer of `capacity` is to be released before the connection waits
/// for its next request.
inline bool release_between_requests(std::size_t capacity) {
  return capacity > kept_capacity;
}

}  // namespace pushonce::gateway
