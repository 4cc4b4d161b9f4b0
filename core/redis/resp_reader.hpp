#pragma once
// The RESP decoder of a Redis connection, without the socket: feed the bytes as they arrive,
// take the complete replies in order. hiredis 0.14's redisReader does the parsing (RESP2
// only: no RESP3 types, no push frames); our object functions build redis::reply trees
// directly. Kept apart from resp_stream so that it can be fuzzed alone (tests/fuzz).
//
// What a hostile or broken peer cannot do here:
// - make us allocate what it only announces: an array header reserves at most
//   max_reserve elements; the rest grow as the elements really arrive (a `*33026026`
//   header alone once reserved 2.4 GB); a bulk string is built only once all its bytes
//   are buffered (hiredis waits for them; nothing is reserved from the length);
// - crash the parser: an array count that does not fit an int (hiredis 0.14 truncates it,
//   and a negative count would trip its assert) and an element out of order are protocol
//   errors; arrays nested more than 8 deep are hiredis's own protocol error (Debian's 0.14.1
//   also refuses counts over INT_MAX itself).
// After a protocol error the reader stays failed until reset() (the connection is dropped).

#include <cstddef>
#include <string>
#include <string_view>
#include <system_error>

#include "core/redis/reply.hpp"

struct redisReader;

namespace pushonce::redis {

class resp_reader {
 public:
  /// Elements reserved ahead for one array, whatever count its header announces.
  static constexpr std::size_t max_reserve = 1024;

  resp_reader();
  ~resp_reader();
  resp_reader(const resp_reader&) = delete;
  resp_reader& operator=(const resp_reader&) = delete;

  /// Appends received bytes. false (and nothing kept) when the reader has failed.
  bool feed(const char* data, std::size_t size);
  bool feed(std::string_view bytes) { return feed(bytes.data(), bytes.size()); }
  /// The next complete reply, moved into `out`: true when one was taken, or when the input
  /// is not RESP (then `ec` is error::protocol and error_text() says why); false when more
  /// bytes are needed.
  bool take(reply& out, std::error_code& ec);
  /// Forgets buffered bytes and any failure (a new connection).
  void reset();
  bool failed() const;
  /// hiredis's description of the protocol error ("" when none).
  std::string error_text() const;

 private:
  redisReader* reader_ = nullptr;
  const char* refusal_ = nullptr;  // why our object functions stopped the parse
};

}  // namespace pushonce::redis
