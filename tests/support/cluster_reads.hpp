#pragma once
// Reads of a test Redis Cluster from outside, on the master serving each key's slot now:
// what the cluster tests and benchmarks check once their programs are quiet.

#include <map>
#include <string>

#include "core/keys.hpp"
#include "tests/support/redis_cluster.hpp"

namespace pushonce::test {

/// The sweep cursor of an outbox is at its last entry (or the outbox is empty).
bool outbox_swept(redis_cluster& cluster, const std::string& outbox, const std::string& sweep);

/// Every outbox a worker sweeps, the queue's and each bus shard's, is swept (false as well
/// when a node does not answer: one of the old layout, gone).
bool outboxes_swept(redis_cluster& cluster, const keys& k, const std::string& queue);

/// A hash as field -> value.
std::map<std::string, std::string> hash_of(redis_cluster& cluster, const std::string& key);

}  // namespace pushonce::test
