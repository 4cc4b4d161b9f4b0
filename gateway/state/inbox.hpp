#pragma once
// A user's inbox as the gateway uses it (docs/protocol.md, resume): the session start
// (session.lua: epoch, latest and acked offsets), acks (ack.lua), reading the inbox stream
// a page at a time (XRANGE), and keeping the inbox and offset counter of the users with an
// open session from expiring. One object per gateway; no sockets of its own.

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/keys.hpp"
#include "core/lua/session.hpp"
#include "core/outcome.hpp"
#include "core/redis/connection.hpp"

namespace pushonce::redis {
class connection;
struct reply;
}  // namespace pushonce::redis

namespace pushonce::gateway {

/// One inbox entry: its offset (stream id "<offset>-0") and the frame (field f).
struct inbox_entry {
  long long offset = 0;
  std::string frame;
};
using inbox_page = std::vector<inbox_entry>;

/// What session.lua answers.
struct inbox_position {
  std::string epoch;
  long long latest = 0;
  long long acked = 0;
  bool rotated = false;  // the stored epoch was replaced by the new one (offsets went back)
};

class inbox {
 public:
  inbox(std::shared_ptr<redis::connection> conn, keys k, std::chrono::milliseconds idle_ttl,
        std::size_t page_size);

  /// session.lua: the user's epoch (created with `new_epoch` when missing, replaced by it
  /// when `since` shows the offsets went back) and offsets.
  boost::asio::awaitable<outcome<inbox_position>> open(
      std::string user, std::string new_epoch, std::optional<lua::session_since> since = {});
  /// ack.lua: the user has seen everything up to `offset` of `epoch`.
  boost::asio::awaitable<outcome<none>> ack(std::string user, std::string epoch, long long offset);
  /// The stored {epoch, latest offset} (HMGET, no change; acked 0), or why Redis did not
  /// answer it. An epoch "" when the user has none.
  boost::asio::awaitable<outcome<inbox_position>> position(std::string user);
  /// The entries after `after`, at most page_size(), or why Redis did not answer them.
  boost::asio::awaitable<outcome<inbox_page>> read_page(std::string user, long long after);
  /// PEXPIRE the meta hash and inbox of every user given (one pipeline per 256 users): a
  /// user with an open session is not idle. Run every third of the idle TTL.
  boost::asio::awaitable<void> refresh(std::vector<std::string> users);

  std::size_t page_size() const { return page_size_; }
  std::chrono::milliseconds idle_ttl() const { return idle_ttl_; }

  /// Parses an XRANGE reply; entries whose id or field is not as written by claim.lua
  /// are skipped. std::nullopt when the reply is not an array.
  static std::optional<inbox_page> parse_page(const redis::reply& r);
  /// Parses session.lua's {epoch, offset, acked}; std::nullopt when malformed.
  static std::optional<inbox_position> parse_position(const redis::reply& r);

 private:
  std::shared_ptr<redis::connection> conn_;
  keys keys_;
  std::chrono::milliseconds idle_ttl_;
  std::size_t page_size_;
};

}  // namespace pushonce::gateway
