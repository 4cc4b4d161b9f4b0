#include <doctest/doctest.h>

#include "gateway/http/http_read_buffer.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_gateway_http_read_buffer_unit {

using namespace pushonce::gateway;

TEST_CASE("http_read_buffer: a body with a length is read into room for all of it") {
  // 300 bytes of the body came with the header; 8073 are announced.
  CHECK(body_read_capacity(300, 8073, 1u << 20) == 300 + 8073);
  CHECK(body_read_capacity(0, 0, 1u << 20) == 0);
}

TEST_CASE("http_read_buffer: an announced length over the limit reserves only the limit") {
  // The gateway's limit: what Beast reads in one call at most.
  CHECK(body_read_capacity(300, 1u << 20, body_read_chunk) == 300 + 64 * 1024);
  CHECK(body_read_capacity(100, 5ull << 30, 1u << 20) == 100 + (1u << 20));
  CHECK(body_read_capacity(0, ~0ull, 4096) == 4096);
}

TEST_CASE("http_read_buffer: a chunked body gets the kept capacity") {
  CHECK(body_read_capacity(10, std::nullopt, 1u << 20) == 10 + kept_capacity);
  CHECK(body_read_capacity(10, std::nullopt, 1000) == 10 + 1000);
}

TEST_CASE("http_read_buffer: only a buffer grown past the kept capacity is released") {
  CHECK_FALSE(release_between_requests(512));
  CHECK_FALSE(release_between_requests(kept_capacity));
  CHECK(release_between_requests(kept_capacity + 1));
  CHECK(release_between_requests(1u << 20));
}

}  // namespace test_gateway_http_read_buffer_unit
