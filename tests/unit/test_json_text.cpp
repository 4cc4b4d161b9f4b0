#include "core/json_text.hpp"
// (the header under test first: it is self-contained)

#include <doctest/doctest.h>

#include <boost/json.hpp>
#include <limits>

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_json_text_unit {

using namespace pushonce;
namespace json = boost::json;

TEST_CASE("number_text: doubles as people write them, never 6E1") {
  CHECK(number_text(60.0) == "60");
  CHECK(number_text(0.0) == "0");
  CHECK(number_text(-0.0) == "0");
  CHECK(number_text(0.5) == "0.5");
  CHECK(number_text(12.3) == "12.3");
  CHECK(number_text(-2.25) == "-2.25");
  CHECK(number_text(41152.0) == "41152");
  CHECK(number_text(1e21) == "1e+21");  // still JSON
  CHECK(number_text(std::numeric_limits<double>::quiet_NaN()) == "null");
  CHECK(number_text(std::numeric_limits<double>::infinity()) == "null");
  // every form reads back as the same double
  for (double d : {60.0, 0.5, 0.1, 1.0 / 3, 123456.789, 1e-7})
    CHECK(json::parse(number_text(d)).to_number<double>() == d);
}

TEST_CASE("json_text: nested doubles written by number_text, the rest as boost::json") {
  json::value v = {{"assignment_rate_per_min", 60.0},
                   {"rate", 0.0},
                   {"p", json::array{0.5, 2, "x\"y", nullptr, true}},
                   {"n", -3}};
  const auto text = json_text(v);
  CHECK(text == R"({"assignment_rate_per_min":60,"rate":0,"p":[0.5,2,"x\"y",null,true],"n":-3})");
  // the same numbers once read back (60 reads as an integer, 6E1 as a double)
  auto back = json::parse(text);
  CHECK(back.at("assignment_rate_per_min").to_number<double>() == 60.0);
  CHECK(back.at("p").at(0).to_number<double>() == 0.5);
  CHECK(json_text(json::object{}) == "{}");
  CHECK(json_text(json::array{}) == "[]");
  CHECK(json_text(json::value("a\nb")) == R"("a\nb")");
}

}  // namespace test_json_text_unit
