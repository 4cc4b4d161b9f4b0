#include <doctest/doctest.h>

#include <string>

#include "gateway/session/send_queue.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_gateway_send_queue_unit {

using namespace pushonce::gateway;
using push = send_queue::push_result;
using after = send_queue::after_write;

namespace {

send_queue::frame_ptr frame(std::size_t n, char c = 'x') {
  return std::make_shared<const std::string>(n, c);
}

send_queue::limits small() {
  send_queue::limits l;
  l.max_frames = 4;
  l.max_bytes = 100;
  l.low_frames = 2;
  l.low_bytes = 50;
  l.max_batch = 3;
  return l;
}

}  // namespace

TEST_CASE("send_queue: bounded by frame count") {
  send_queue q(small());
  for (int i = 0; i < 4; ++i) CHECK(q.push(frame(1)) == push::accepted);
  CHECK(q.push(frame(1)) == push::over_limit);
  CHECK(q.frames() == 4);
  CHECK(q.bytes() == 4);
}

TEST_CASE("send_queue: bounded by bytes, the refused frame is not queued") {
  send_queue q(small());
  CHECK(q.push(frame(60)) == push::accepted);
  CHECK(q.push(frame(41)) == push::over_limit);
  CHECK(q.frames() == 1);
  CHECK(q.bytes() == 60);
  CHECK(q.push(frame(40)) == push::accepted);  // exactly at the bound is fine
  CHECK(q.bytes() == 100);
  CHECK(q.push(frame(1)) == push::over_limit);
}

TEST_CASE("send_queue: frames in flight still count against the bounds") {
  send_queue q(small());
  for (int i = 0; i < 4; ++i) q.push(frame(1));
  CHECK(q.take_batch().size() == 3);
  CHECK(q.push(frame(1)) == push::over_limit);
  CHECK(q.on_written() == after::write_more);
  CHECK(q.frames() == 1);
  CHECK(q.push(frame(1)) == push::accepted);
}

TEST_CASE("send_queue: one write in flight; batches keep order") {
  send_queue q(small());
  for (char c : std::string("abcd")) q.push(frame(1, c));
  auto b = q.take_batch();
  REQUIRE(b.size() == 3);  // max_batch
  CHECK(*b[0] == "a");
  CHECK(*b[2] == "c");
  CHECK(q.writing());
  CHECK(q.take_batch().empty());  // one in flight
  CHECK(q.on_written() == after::write_more);
  CHECK_FALSE(q.writing());
  auto b2 = q.take_batch();
  REQUIRE(b2.size() == 1);
  CHECK(*b2[0] == "d");
  CHECK(q.on_written() == after::idle);
  CHECK(q.frames() == 0);
  CHECK(q.bytes() == 0);
  CHECK(q.take_batch().empty());
}

TEST_CASE("send_queue: take_batch honours the caller's maximum (one frame per write)") {
  send_queue q(small());
  q.push(frame(1, 'a'));
  q.push(frame(1, 'b'));
  auto b = q.take_batch(1);
  REQUIRE(b.size() == 1);
  CHECK(*b[0] == "a");
  CHECK(q.on_written() == after::write_more);
  CHECK(*q.take_batch(1)[0] == "b");
}

TEST_CASE("send_queue: low-water mark by frames and by bytes") {
  send_queue q(small());
  CHECK(q.has_room());
  q.push(frame(1));
  CHECK(q.has_room());
  q.push(frame(1));
  CHECK_FALSE(q.has_room());  // 2 frames: at the low mark
  q.take_batch(1);
  CHECK_FALSE(q.has_room());  // in flight still counts
  q.on_written();
  CHECK(q.has_room());

  send_queue big(small());
  big.push(frame(50));
  CHECK_FALSE(big.has_room());  // 50 bytes: at the low mark
  big.take_batch();
  big.on_written();
  CHECK(big.has_room());
}

TEST_CASE("send_queue: close with nothing in flight may close at once, drops the queued") {
  send_queue q(small());
  q.push(frame(5));
  q.push(frame(5));
  CHECK(q.close());
  CHECK(q.closing());
  CHECK(q.frames() == 0);
  CHECK(q.bytes() == 0);
  CHECK(q.push(frame(1)) == push::dropped);
  CHECK(q.take_batch().empty());
  CHECK_FALSE(q.close());  // only once
}

TEST_CASE("send_queue: close after the write in flight drains") {
  send_queue q(small());
  for (int i = 0; i < 4; ++i) q.push(frame(5));
  auto b = q.take_batch(2);
  CHECK(b.size() == 2);
  CHECK_FALSE(q.close());  // a write is in flight: close when it completes
  CHECK(q.frames() == 2);  // only the in-flight frames are left
  CHECK(q.bytes() == 10);
  CHECK(q.push(frame(1)) == push::dropped);
  CHECK(q.on_written() == after::close);
  CHECK(q.frames() == 0);
  CHECK(q.bytes() == 0);
  CHECK(q.take_batch().empty());
}

TEST_CASE("send_queue: drop (connection ended) keeps the write in flight, sends no close") {
  send_queue q(small());
  q.push(frame(5));
  q.push(frame(5));
  q.take_batch(1);
  q.drop();
  CHECK(q.closing());
  CHECK(q.frames() == 1);  // the buffer in flight stays alive until its write completes
  CHECK(q.push(frame(1)) == push::dropped);
  CHECK(q.on_written() == after::idle);
  CHECK(q.frames() == 0);
  CHECK_FALSE(q.close());
}

TEST_CASE("send_queue: abort drops everything, in flight included") {
  send_queue q(small());
  q.push(frame(5));
  q.push(frame(5));
  q.take_batch(1);
  q.abort();
  CHECK(q.frames() == 0);
  CHECK(q.bytes() == 0);
  CHECK_FALSE(q.writing());
  CHECK(q.push(frame(1)) == push::dropped);
  CHECK_FALSE(q.close());
}

TEST_CASE("send_queue: many frames through a small queue keep order and accounting") {
  send_queue::limits l;
  l.max_frames = 8;
  l.max_bytes = 1000;
  l.max_batch = 5;
  send_queue q(l);
  int pushed = 0, written = 0;
  std::string seen;
  while (written < 500) {
    while (pushed < 500 && q.push(frame(1, static_cast<char>('a' + pushed % 26))) == push::accepted)
      ++pushed;
    auto b = q.take_batch();
    REQUIRE_FALSE(b.empty());
    for (auto& f : b) seen += *f;
    written += static_cast<int>(b.size());
    q.on_written();
  }
  CHECK(q.frames() == 0);
  CHECK(q.bytes() == 0);
  REQUIRE(seen.size() == 500);
  for (int i = 0; i < 500; ++i) CHECK(seen[i] == static_cast<char>('a' + i % 26));
}

}  // namespace test_gateway_send_queue_unit
