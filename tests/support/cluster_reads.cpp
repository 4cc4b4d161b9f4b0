#include "tests/support/cluster_reads.hpp"

#include <hiredis/hiredis.h>

#include <exception>

#include "tests/support/sync_redis.hpp"

namespace pushonce::test {

bool outbox_swept(redis_cluster& cluster, const std::string& outbox, const std::string& sweep) {
  sync_redis r(cluster.master_of(cluster.slot_of(outbox)));
  auto last = r.cmd({"XREVRANGE", outbox, "+", "-", "COUNT", "1"});
  if (last->type != REDIS_REPLY_ARRAY || last->elements == 0) return true;
  auto* id = last->element[0]->element[0];
  return r.text({"GET", sweep}) == std::string(id->str, id->len);
}

bool outboxes_swept(redis_cluster& cluster, const keys& k, const std::string& queue) {
  try {
    if (!outbox_swept(cluster, k.queue(queue, "outbox"), k.queue(queue, "sweep"))) return false;
    for (unsigned n = 0; n < k.shards(); ++n)
      if (!outbox_swept(cluster, k.bus(n, "outbox"), k.bus(n, "sweep"))) return false;
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

std::map<std::string, std::string> hash_of(redis_cluster& cluster, const std::string& key) {
  sync_redis r(cluster.master_of(cluster.slot_of(key)));
  auto h = r.cmd({"HGETALL", key});
  std::map<std::string, std::string> out;
  for (std::size_t i = 0; h && h->type == REDIS_REPLY_ARRAY && i + 1 < h->elements; i += 2)
    out[std::string(h->element[i]->str, h->element[i]->len)] =
        std::string(h->element[i + 1]->str, h->element[i + 1]->len);
  return out;
}

}  // namespace pushonce::test
