#pragma once
// What an error *reply* from Redis means for the client, decided from its first word alone
// (no I/O, unit-tested):
//
//  - failover: READONLY (we talk to a replica: the master failed over), LOADING (the server
//    is still loading its data set), MASTERDOWN (a replica that lost its master). The
//    connection must be dropped and made again: a new DNS lookup or a sentinel/proxy then
//    leads to the new master.
//  - unavailable: OOM (maxmemory reached with noeviction), BUSY (a script or function runs
//    past busy-reply-threshold), MISCONF (writes refused after failed RDB saves),
//    CLUSTERDOWN (a Redis Cluster slot without a master), TRYAGAIN (a multi-key command
//    while its slot migrates). Redis is there but refuses work for now: callers answer
//    `redis_unavailable` (HTTP 503), never `internal`. (The cluster client retries the last
//    two until the command's deadline before its caller sees them.) Also NOREPLICAS (the
//    master has fewer replicas than min-replicas-to-write, a common Sentinel setting), and
//    MOVED/ASK left over once the cluster client's redirections are spent (a reshard that
//    keeps moving the slot, or a cluster node reached without cluster mode).
//  - denied: NOPERM (the Redis user's ACL refuses a command or a key). An operator's error,
//    logged as one, but for the caller Redis refuses work as above: `redis_unavailable`.
//  - ordinary: everything else (a script's own codes such as already_queued, ERR, NOSCRIPT,
//    WRONGTYPE, BUSYKEY ...): passed on as the reply says.

#include <string_view>

namespace pushonce::redis {

enum class error_reply_class { ordinary, failover, unavailable, denied };

/// The class of an error reply's code (its first word, e.g. "OOM"); codes are exact.
error_reply_class classify_error_code(std::string_view code);

/// A short human description of a failover/unavailable/denied code, for log lines.
std::string_view describe_error_code(std::string_view code);

}  // namespace pushonce::redis
