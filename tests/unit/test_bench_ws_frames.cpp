// pushonce-bench's own WebSocket frame reader and writer (bench/ws_frames.hpp).

#include <doctest/doctest.h>

#include <string>

#include "bench/ws_frames.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_bench_ws_frames_unit {

using namespace pushonce::bench;
using op = ws_frame_decoder::opcode;

namespace {

std::string encoded_frame(std::uint8_t first, const std::string& payload) {
  std::string f;
  f.push_back(static_cast<char>(first));
  if (payload.size() < 126) {
    f.push_back(static_cast<char>(payload.size()));
  } else {
    f.push_back(126);
    f.push_back(static_cast<char>(payload.size() >> 8));
    f.push_back(static_cast<char>(payload.size() & 0xff));
  }
  return f + payload;
}

}  // namespace

TEST_CASE("bench ws frames: several frames in one read, and one split over reads") {
  ws_frame_decoder d;
  std::string big(300, 'x');
  auto bytes =
      encoded_frame(0x81, "{\"a\":1}") + encoded_frame(0x81, big) + encoded_frame(0x89, "hi");
  d.append(bytes.data(), bytes.size() - 1);  // the ping's last byte not yet here
  ws_frame_decoder::frame f{};
  REQUIRE(d.next(f) == ws_frame_decoder::status::frame);
  CHECK(f.op == op::text);
  CHECK(f.payload == "{\"a\":1}");
  REQUIRE(d.next(f) == ws_frame_decoder::status::frame);
  CHECK(f.payload == big);
  CHECK(d.next(f) == ws_frame_decoder::status::need_more);
  d.append(bytes.data() + bytes.size() - 1, 1);
  REQUIRE(d.next(f) == ws_frame_decoder::status::frame);
  CHECK(f.op == op::ping);
  CHECK(f.payload == "hi");
  CHECK(d.next(f) == ws_frame_decoder::status::need_more);
}

TEST_CASE("bench ws frames: fragments are joined into one message") {
  ws_frame_decoder d;
  auto bytes =
      encoded_frame(0x01, "{\"a\"") + encoded_frame(0x89, "p") + encoded_frame(0x80, ":2}");
  d.append(bytes.data(), bytes.size());
  ws_frame_decoder::frame f{};
  REQUIRE(d.next(f) == ws_frame_decoder::status::frame);
  CHECK(f.op == op::ping);  // a control frame may come between fragments
  REQUIRE(d.next(f) == ws_frame_decoder::status::frame);
  CHECK(f.op == op::text);
  CHECK(f.payload == "{\"a\":2}");
}

TEST_CASE("bench ws frames: protocol errors") {
  for (const auto& bad : {encoded_frame(0xC1, "x"),     // RSV1 without an extension
                          encoded_frame(0x80, "x"),     // continuation with nothing to continue
                          encoded_frame(0x83, "x"),     // unknown opcode
                          encoded_frame(0x09, "x")}) {  // fragmented ping
    ws_frame_decoder d;
    d.append(bad.data(), bad.size());
    ws_frame_decoder::frame f{};
    CHECK(d.next(f) == ws_frame_decoder::status::error);
    CHECK_FALSE(d.error().empty());
  }
}

TEST_CASE("bench ws frames: a client frame is masked and decodes back") {
  auto f = encode_client_frame(op::text, R"({"op":"hello","user":"u"})", 0x11223344);
  CHECK((static_cast<unsigned char>(f[1]) & 0x80) != 0);
  CHECK(f.find("hello") == std::string::npos);  // masked on the wire
  ws_frame_decoder d;
  d.append(f.data(), f.size());
  ws_frame_decoder::frame out{};
  REQUIRE(d.next(out) == ws_frame_decoder::status::frame);
  CHECK(out.payload == R"({"op":"hello","user":"u"})");
  std::string long_payload(70000, 'y');
  auto g = encode_client_frame(op::binary, long_payload, 7);
  ws_frame_decoder d2;
  d2.append(g.data(), g.size());
  REQUIRE(d2.next(out) == ws_frame_decoder::status::frame);
  CHECK(out.payload == long_payload);
}

}  // namespace test_bench_ws_frames_unit
