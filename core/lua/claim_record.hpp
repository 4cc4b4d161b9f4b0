#pragma once
// A claim record (the value claim.lua keeps per message: delivered, leased, released or
// dead-lettered) read and written in C++ in this one place; lua/lib/prelude.lua holds the
// same grammar for the scripts:
//   "<offset>" or "<offset>:<attempts>"   delivered (attempts shown when more than 1)
//   "l:<owner>:<until ms>:<attempts>"     leased
//   "r:<attempts>"                        lease handed back ("r:0": replayed)
//   "x:<attempts>:<reason>"               dead-lettered
//   "p:<offset>:<attempts>"               delivered, its frame not yet published (mode 'n')

#include <optional>
#include <string>
#include <string_view>

#include "core/redis/reply.hpp"

namespace pushonce::lua {

/// A claim record as claim.lua writes it (read by the sweeper and `trace`, record_read).
struct claim_record {
  enum class kind { none, delivered, leased, released, dead } state = kind::none;
  long long offset = 0;      // delivered
  bool unpublished = false;  // delivered, the frame maybe not out yet (the sweeper sends it)
  long long attempts = 0;    // leases taken so far (1 for a first delivery)
  long long until_ms = 0;    // leased: when the lease ends
  std::string owner;         // leased
  std::string reason;        // dead
};

/// Parses a claim record; a nil reply is `none`; std::nullopt when it is not one.
std::optional<claim_record> parse_claim_record(const redis::reply& value);

/// A record's number field (an offset, a lease deadline, attempts): 1-18 decimal digits.
std::optional<long long> record_number(std::string_view s);

/// The text of a record (none: ""), as the scripts write it.
std::string claim_record_text(const claim_record& r);

}  // namespace pushonce::lua
