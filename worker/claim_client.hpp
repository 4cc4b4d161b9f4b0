#pragma once
// The two scripts that make delivery exactly-once: claim.lua (who may process a message)
// and deliver.lua (append to the user's inbox, only while holding the lease).

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <memory>
#include <string>

#include "core/keys.hpp"
#include "core/message.hpp"
#include "core/outcome.hpp"

namespace pushonce::worker {

enum class claim_state { won, taken, done, dead };

struct claim_result {
  claim_state state = claim_state::taken;
  long long attempts = 0;  // won: how many leases this message has had (1 = first)
  long long offset = 0;    // done: the offset it was delivered at
};

struct claim_options {
  std::chrono::milliseconds lease{5000};
  std::chrono::milliseconds dedup_window{std::chrono::hours(24)};
  long long inbox_maxlen = 1000;
  std::chrono::milliseconds inbox_idle{std::chrono::hours(24 * 7)};
};

class claim_client {
 public:
  claim_client(std::shared_ptr<redis::connection> conn, keys k, claim_options opts);

  boost::asio::awaitable<outcome<claim_result>> claim(const bus_message& m, std::string owner);
  /// The user's offset; failure "fenced" when the lease was lost (nothing written).
  boost::asio::awaitable<outcome<long long>> deliver(const bus_message& m, std::string owner);
  /// Hands back a lease the caller holds (shutdown). True when it held it.
  boost::asio::awaitable<bool> release(const bus_message& m, std::string owner);
  /// Adds the message to the dead-letter stream, then marks its claim dead (while the
  /// caller still holds the lease). True when marked.
  boost::asio::awaitable<outcome<bool>> dead_letter(const bus_message& m, std::string owner,
                                                    std::string reason, long long attempts);

  const claim_options& options() const { return opts_; }

 private:
  std::shared_ptr<redis::connection> conn_;
  keys keys_;
  claim_options opts_;
};

}  // namespace pushonce::worker
