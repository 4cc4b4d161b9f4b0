#include <doctest/doctest.h>

#include <boost/json.hpp>

#include "core/queue_refusals.hpp"
#include "gateway/session/op_handlers.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_gateway_op_handlers_unit {

using namespace pushonce;
using namespace pushonce::gateway;

namespace {
boost::json::object json(const std::string& s) {
  return boost::json::parse(s).as_object();
}
}  // namespace

TEST_CASE("op replies: join answers joined, or the contract's error code") {
  auto ok = json(reply_join("q", outcome<join_result>(join_result{3, 42})));
  CHECK(ok.at("type") == "joined");
  CHECK(ok.at("queue") == "q");
  CHECK(ok.at("position") == 3);
  CHECK(ok.at("ticket") == 42);
  for (auto [code, expect] :
       {std::pair{errc::already_queued, "conflict"}, std::pair{errc::already_assigned, "conflict"},
        std::pair{errc::not_found, "not_found"}, std::pair{errc::bad_request, "bad_request"},
        std::pair{errc::redis_unavailable, "internal"}}) {
    auto e = json(reply_join("q", outcome<join_result>(failure{code, "why"})));
    CHECK(e.at("type") == "error");
    CHECK(e.at("code") == expect);
    CHECK(e.at("message") == "why");
    CHECK(e.at("op") == "join");
  }
}

TEST_CASE("op replies: leave, position, accept") {
  CHECK(json(reply_leave("q", outcome<none>(none{}))).at("type") == "left");
  auto nq = json(reply_leave("q", outcome<none>(failure{errc::not_queued, "x"})));
  CHECK(nq.at("code") == "not_found");
  CHECK(nq.at("op") == "leave");
  auto p = json(reply_position("q", outcome<long long>(7)));
  CHECK(p.at("type") == "position");
  CHECK(p.at("position") == 7);
  CHECK(json(reply_position("q", outcome<long long>(failure{errc::not_queued, "x"}))).at("op") ==
        "position");
  auto a = json(reply_accept(outcome<lua::accept_reply>(lua::accept_reply{"123", "r1", {}})));
  CHECK(a.at("type") == "accepted");
  CHECK(a.at("id") == "123");
  CHECK_FALSE(a.contains("expires_at"));
  // With a lease: its end after the accept, for a page's countdown.
  auto leased = json(
      reply_accept(outcome<lua::accept_reply>(lua::accept_reply{"123", "r1", 1796148600000LL})));
  CHECK(leased.at("expires_at") == 1796148600000LL);
  auto an =
      json(reply_accept(outcome<lua::accept_reply>(failure{errc::not_found, "no assignment"})));
  CHECK(an.at("code") == "not_found");
  CHECK(an.at("op") == "accept");
}

TEST_CASE("op replies: the pre-queue answers position null and opens_at; closed, full") {
  join_result pre;
  pre.opens_at = 1700000000000;
  auto j = json(reply_join("q", outcome<join_result>(pre)));
  CHECK(j.at("type") == "joined");
  CHECK(j.at("position").is_null());
  CHECK(j.at("ticket").is_null());
  CHECK(j.at("opens_at") == 1700000000000);
  for (auto [code, expect] : {std::pair{errc_closed, "closed"}, std::pair{errc_full, "full"}}) {
    auto e = json(reply_join("q", outcome<join_result>(failure{code, "why"})));
    CHECK(e.at("code") == expect);
    CHECK(e.at("op") == "join");
  }
  queue_standing waiting{5, 3, 9, false, std::nullopt};
  auto w = json(reply_standing("q", "alice", outcome<queue_standing>(waiting)));
  CHECK(w.at("type") == "position");
  CHECK(w.at("position") == 3);
  CHECK_FALSE(w.contains("opens_at"));
  queue_standing prequeued{5, 0, 0, true, 1700000000000};
  auto p = json(reply_standing("q", "alice", outcome<queue_standing>(prequeued)));
  CHECK(p.at("position").is_null());
  CHECK(p.at("opens_at") == 1700000000000);
  auto n = json(reply_standing("q", "alice", outcome<queue_standing>(queue_standing{})));
  CHECK(n.at("code") == "not_found");
  CHECK(n.at("op") == "position");
}

TEST_CASE("op replies: an ack is answered only when it failed") {
  CHECK_FALSE(reply_ack(outcome<none>(none{})));
  auto f = reply_ack(outcome<none>(failure{errc::bad_request, "offset beyond latest"}));
  REQUIRE(f);
  CHECK(json(*f).at("code") == "bad_request");
  CHECK(json(*f).at("op") == "ack");
}

TEST_CASE("op replies: internal failures are the gateway's") {
  CHECK(is_internal(failure{errc::redis_unavailable, ""}));
  CHECK(is_internal(failure{errc::exhausted, ""}));
  CHECK_FALSE(is_internal(failure{errc::already_queued, ""}));
}

}  // namespace test_gateway_op_handlers_unit
