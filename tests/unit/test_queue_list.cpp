// leader/queue_list: which registered queues a leader's --queue list lacks.

#include <doctest/doctest.h>

#include "leader/queue_list.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_queue_list_unit {

using pushonce::leader::queues_missing_from;
using list = std::vector<std::string>;

TEST_CASE("queue list: a leader lacking a registered queue is told which") {
  CHECK(queues_missing_from({"default"}, {}).empty());
  CHECK(queues_missing_from({"default"}, {"default"}).empty());
  CHECK(queues_missing_from({"b", "a"}, {"a", "b"}).empty());
  CHECK(queues_missing_from({"a", "b", "c"}, {"a"}).empty());  // a superset is fine
  CHECK(queues_missing_from({"a"}, {"c", "a", "b", "b"}) == list{"b", "c"});
}

}  // namespace test_queue_list_unit
