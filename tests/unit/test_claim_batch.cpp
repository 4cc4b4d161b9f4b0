// The race for a bus payload (core/lua/claim: claim_batch_command, parse_claim_batch_reply).
#include "core/lua/claim.hpp"
// (the header under test first: it is self-contained)

#include <doctest/doctest.h>

#include <vector>

#include "core/redis/scripts.hpp"

using pushonce::bus_message;
using pushonce::keys;
using pushonce::lua::claim_batch_command;
using pushonce::lua::parse_claim_batch_reply;
using pushonce::redis::reply;

namespace {
bus_message msg(std::string id, std::string user) {
  bus_message m;
  m.id = std::move(id);
  m.user = std::move(user);
  return m;
}
}  // namespace

TEST_CASE("claim_batch_command: one key named by the first message, owner and lease") {
  keys k("ns");
  std::vector<bus_message> batch = {msg("8192", "alice"), msg("12288", "bob")};
  auto cmd = claim_batch_command(k, batch, "w1:7", std::chrono::milliseconds(5000));
  const std::vector<std::string> want{
      "EVALSHA", pushonce::redis::get_script("claim_batch").sha1, "1", "ns:b:8192", "w1:7", "5000"};
  CHECK(std::vector<std::string>(cmd.begin(), cmd.end()) == want);
  // The same payload heard by another worker races for the same key; the next does not.
  std::vector<bus_message> next = {msg("16384", "carol")};
  CHECK(claim_batch_command(k, batch, "w2:1", std::chrono::milliseconds(5000))[3] == cmd[3]);
  CHECK(claim_batch_command(k, next, "w1:8", std::chrono::milliseconds(5000))[3] == "ns:b:16384");
}

TEST_CASE("parse_claim_batch_reply: 1 won, 0 lost, anything else is not the script's") {
  reply won, lost, two, text, nil;
  won.kind = lost.kind = two.kind = reply::type::integer;
  won.integer = 1;
  lost.integer = 0;
  two.integer = 2;
  text.kind = reply::type::string;
  text.str = "1";
  CHECK(parse_claim_batch_reply(won) == true);
  CHECK(parse_claim_batch_reply(lost) == false);
  CHECK_FALSE(parse_claim_batch_reply(two).has_value());
  CHECK_FALSE(parse_claim_batch_reply(text).has_value());
  CHECK_FALSE(parse_claim_batch_reply(nil).has_value());
}
