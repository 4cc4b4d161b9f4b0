#pragma once
// One session's presence calls (docs/data-model.md, "Presence"), in order on the session's
// strand: presence_open.lua once the session is live, retried with backoff until it lands
// (a lost open would let a connected user be abandoned); presence_close.lua when it ends,
// only if the open landed, retried until it lands too (a lost close would keep a ghost).
// An open still on its way when the session ends is given up: neither call is counted. The
// calls run in a coroutine that holds no reference to the session; while none is due, a
// session pays one pointer and the small record it points to.

#include <boost/asio/any_io_executor.hpp>
#include <memory>
#include <string>

#include "core/keys.hpp"

namespace pushonce::redis {
class connection;
}

namespace pushonce::gateway {

class presence_ledger;

class session_presence {
 public:
  struct calls {
    std::shared_ptr<redis::connection> conn;
    std::shared_ptr<presence_ledger> ledger;
    pushonce::keys keys;
    std::string instance;
  };

  /// The session went live: counts it (once).
  void open(boost::asio::any_io_executor strand, calls c, std::string user);
  /// The session ended: the close, once the open landed.
  void close(boost::asio::any_io_executor strand);

  struct track;  // the calls' record, shared with their coroutine

 private:
  std::shared_ptr<track> t_;
};

}  // namespace pushonce::gateway
