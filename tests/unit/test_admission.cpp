// core/admission_token and core/admission_plan: claims, base64url, the RFC 7638 thumbprint,
// ES256 and HS256 signing and verification, key rotation, the plan's arguments and records;
// gateway/http/admission_api's id and answer.
#include <doctest/doctest.h>
#include <unistd.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/program_options/options_description.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>

#include "core/admission_plan.hpp"
#include "core/admission_token.hpp"
#include "core/config.hpp"
#include "gateway/auth/key_set.hpp"
#include "gateway/http/admission_api.hpp"
#include "tests/support/admission_keys.hpp"

// This file's helpers and cases, apart from the other files of its unity batch.
namespace test_admission_unit {

namespace adm = pushonce::admission;

namespace {

long long admission_test_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

adm::claims sample_claims(long long iat) {
  return adm::claims_for("pushonce", "ada", "default", "seat-1", "69632", iat,
                         std::chrono::seconds(600));
}

// The payload of a compact token, decoded.
boost::json::object payload_of(const std::string& token) {
  auto a = token.find('.');
  auto b = token.find('.', a + 1);
  auto text = adm::base64url_bytes(token.substr(a + 1, b - a - 1));
  REQUIRE(text);
  return boost::json::parse(*text).as_object();
}

}  // namespace

TEST_CASE("admission claims: iss sub queue resource jti iat exp, in that order; read back") {
  auto c = sample_claims(1700000000);
  CHECK(adm::claims_json(c) ==
        R"({"iss":"pushonce","sub":"ada","queue":"default","resource":"seat-1","jti":"69632",)"
        R"("iat":1700000000,"exp":1700000600})");
  auto back = adm::claims_of_json(adm::claims_json(c));
  REQUIRE(back);
  CHECK(back->sub == "ada");
  CHECK(back->queue == "default");
  CHECK(back->resource == "seat-1");
  CHECK(back->jti == "69632");
  CHECK(back->exp == 1700000600);
  CHECK_FALSE(adm::claims_of_json(R"({"sub":"ada","exp":1})"));
  CHECK_FALSE(adm::claims_of_json("not json"));
  CHECK_FALSE(adm::claims_of_json(
      R"({"sub":"ada","queue":"q","resource":"r","jti":"1","iat":"x","exp":2})"));
}

TEST_CASE("base64url: no padding, URL alphabet, round trip") {
  CHECK(adm::base64url("") == "");
  CHECK(adm::base64url("f") == "Zg");
  CHECK(adm::base64url("fo") == "Zm8");
  CHECK(adm::base64url("foo") == "Zm9v");
  CHECK(adm::base64url("\xfb\xff") == "-_8");
  CHECK(adm::base64url_bytes("-_8") == std::string("\xfb\xff"));
  CHECK(adm::base64url_bytes("Zm8=") == std::string("fo"));
  CHECK_FALSE(adm::base64url_bytes("a+b/"));
}

TEST_CASE("jwk_thumbprint: RFC 7638 section 3.1's example key") {
  auto jwk =
      boost::json::parse(
          R"({"kty":"RSA","n":"0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw","e":"AQAB","alg":"RS256","kid":"2011-04-29"})")
          .as_object();
  CHECK(adm::jwk_thumbprint(jwk) == "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs");
  // An EC key (its thumbprint as `jose`'s calculateJwkThumbprint gives it): only crv, kty,
  // x, y count, whatever else the JWK holds and in whatever order.
  auto ec =
      boost::json::parse(
          R"({"y":"i3YM6fByJlpcbExXeg2EIbn7qY7ye623_dhYhUKr-tc","use":"sig","kty":"EC","x":"gb8gmnuGESzv7NxU25HS_P45RoH8TbvMO2gni9gvF7k","crv":"P-256"})")
          .as_object();
  CHECK(adm::jwk_thumbprint(ec) == "2bZKJ-koTVGonC4ox5qprHljyGEbAQrRdURWIiZXi1U");
  CHECK_THROWS_AS(adm::jwk_thumbprint(boost::json::object{{"kty", "EC"}}), std::invalid_argument);
  CHECK_THROWS_AS(adm::jwk_thumbprint(boost::json::object{{"kty", "OKP"}}), std::invalid_argument);
}

TEST_CASE("ES256: kid is the thumbprint; the token verifies; a flipped byte does not") {
  auto pem = pushonce::test::new_p256_private_pem();
  auto s = adm::signer::es256(pem);
  REQUIRE(s->public_half());
  const auto& pub = *s->public_half();
  CHECK(pub.kid == adm::jwk_thumbprint(pub.jwk));
  CHECK(pub.jwk.at("kty").as_string() == "EC");
  CHECK(pub.jwk.at("alg").as_string() == "ES256");
  // The public PEM of the same key gives the same JWK.
  CHECK(adm::public_key_of_pem(pushonce::test::p256_public_pem(pem)).kid == pub.kid);

  auto now = admission_test_now();
  auto token = s->sign(sample_claims(now));
  auto header = adm::base64url_bytes(token.substr(0, token.find('.')));
  REQUIRE(header);
  CHECK(*header == R"({"alg":"ES256","typ":"JWT","kid":")" + pub.kid + R"("})");
  CHECK(payload_of(token).at("jti").as_string() == "69632");

  adm::verifier v({pub}, "");
  auto ok = v.verify(token, now);
  REQUIRE(ok.ok);
  CHECK(ok.ok->sub == "ada");
  CHECK(ok.ok->resource == "seat-1");

  // The JWKS the gateway publishes verifies it too (gateway/auth/key_set: a JWK -> PEM of its own).
  auto set = pushonce::gateway::key_set::parse(v.jwks_json());
  pushonce::jwt::verify_options opts;
  CHECK(set->verify(token, opts).has_value());

  // A flipped byte anywhere: header, payload or signature.
  for (std::size_t at : {std::size_t{5}, token.find('.') + 5, token.size() - 5}) {
    auto bad = token;
    bad[at] = bad[at] == 'A' ? 'B' : 'A';
    auto r = v.verify(bad, now);
    CHECK_FALSE(r.ok);
    CHECK(r.error.code == "invalid");
  }
  auto late = v.verify(token, now + 600);
  CHECK_FALSE(late.ok);
  CHECK(late.error.code == "expired");
  CHECK(v.verify("", now).error.code == "invalid");
  CHECK(v.verify("a.b.c", now).error.code == "invalid");
}

TEST_CASE("ES256: key rotation: a token of the old key verifies while its key is listed") {
  auto old_pem = pushonce::test::new_p256_private_pem();
  auto new_pem = pushonce::test::new_p256_private_pem();
  auto old_signer = adm::signer::es256(old_pem);
  auto new_signer = adm::signer::es256(new_pem);
  auto now = admission_test_now();
  auto old_token = old_signer->sign(sample_claims(now));
  auto new_token = new_signer->sign(sample_claims(now));

  adm::verifier both({*new_signer->public_half(),
                      adm::public_key_of_pem(pushonce::test::p256_public_pem(old_pem))},
                     "");
  CHECK(both.verify(old_token, now).ok);
  CHECK(both.verify(new_token, now).ok);
  CHECK(boost::json::parse(both.jwks_json()).at("keys").as_array().size() == 2);

  adm::verifier new_only({*new_signer->public_half()}, "");
  CHECK(new_only.verify(new_token, now).ok);
  auto r = new_only.verify(old_token, now);
  CHECK_FALSE(r.ok);
  CHECK(r.error.code == "invalid");
  // A key listed twice is published once.
  adm::verifier twice({*new_signer->public_half(), *new_signer->public_half()}, "");
  CHECK(twice.keys().size() == 1);
}

TEST_CASE("HS256: deterministic, verified with the secret only; never with a public key") {
  std::string secret(40, 'k');
  auto s = adm::signer::hs256(secret);
  CHECK_FALSE(s->public_half());
  auto now = admission_test_now();
  auto a = s->sign(sample_claims(now));
  CHECK(a == s->sign(sample_claims(now)));
  adm::verifier with_secret({}, secret);
  CHECK(with_secret.verify(a, now).ok);
  CHECK(with_secret.jwks_json() == R"({"keys":[]})");
  adm::verifier other_secret({}, std::string(40, 'x'));
  CHECK(other_secret.verify(a, now).error.code == "invalid");
  auto ec = adm::signer::es256(pushonce::test::new_p256_private_pem());
  adm::verifier keys_only({*ec->public_half()}, "");
  CHECK(keys_only.verify(a, now).error.code == "invalid");
  CHECK_THROWS_AS(adm::signer::hs256("short"), std::invalid_argument);
  // alg none is refused.
  auto none = adm::base64url(R"({"alg":"none"})") + "." +
              adm::base64url(adm::claims_json(sample_claims(now))) + ".";
  CHECK(with_secret.verify(none, now).error.code == "invalid");
}

TEST_CASE("signer: refuses what is not a P-256 private key") {
  CHECK_THROWS_AS(adm::signer::es256("not a key"), std::invalid_argument);
  auto pub = pushonce::test::p256_public_pem(pushonce::test::new_p256_private_pem());
  CHECK_THROWS_AS(adm::signer::es256(pub), std::invalid_argument);
  CHECK_THROWS_AS(adm::public_key_of_pem("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC "
                                         "KEY-----\n"),
                  std::invalid_argument);
}

TEST_CASE("assign plan: the reply, the ids assign.lua will make, the script's arguments") {
  auto p = adm::plan_of_reply({"41", "0", "ada", "r1", "bob", "r2"});
  REQUIRE(p);
  CHECK(p->seq == "41");
  CHECK(p->pairs.size() == 2);
  CHECK_FALSE(p->idle());
  CHECK(adm::planned_id(*p, 0, 16) == std::to_string(42 * 4096 + 16));
  CHECK(adm::planned_id(*p, 1, 16) == std::to_string(43 * 4096 + 16));
  CHECK(adm::plan_args(*p, {"t1", "t2"}) ==
        std::vector<std::string>{"2", "41", "ada", "r1", "t1", "bob", "r2", "t2"});

  auto idle = adm::plan_of_reply({"0", "0"});
  REQUIRE(idle);
  CHECK(idle->idle());
  auto stale_only = adm::plan_of_reply({"7", "2"});
  REQUIRE(stale_only);
  CHECK_FALSE(stale_only->idle());  // assign.lua must still run, to drop them
  CHECK(adm::plan_args(*stale_only, {}) == std::vector<std::string>{"0", "7"});

  CHECK_FALSE(adm::plan_of_reply({}));
  CHECK_FALSE(adm::plan_of_reply({"1", "0", "ada"}));
  CHECK_FALSE(adm::plan_of_reply({"x", "0"}));
}

TEST_CASE("assign plan: cut into calls of a batch, each with the seq its ids start after") {
  adm::assign_plan p;
  p.seq = "100";
  for (int i = 0; i < 5; ++i)
    p.pairs.emplace_back("u" + std::to_string(i), "r" + std::to_string(i));
  auto parts = adm::split_plan(p, 2);
  REQUIRE(parts.size() == 3);
  CHECK(parts[0].seq == "100");
  CHECK(parts[1].seq == "102");
  CHECK(parts[2].seq == "104");
  CHECK(parts[2].pairs.size() == 1);
  CHECK(parts[2].pairs[0].first == "u4");
  // The ids are those of the whole plan, in order.
  CHECK(adm::planned_id(parts[1], 1, 16) == adm::planned_id(p, 3, 16));
  CHECK(adm::planned_id(parts[2], 0, 16) == adm::planned_id(p, 4, 16));
  // Stale heads: one part of at most a batch.
  p.stale = 1;
  auto one = adm::split_plan(p, 2);
  REQUIRE(one.size() == 1);
  CHECK(one[0].pairs.size() == 2);
  CHECK(one[0].stale == 1);
  // An empty plan is one empty part.
  adm::assign_plan empty;
  empty.seq = "0";
  CHECK(adm::split_plan(empty, 200).size() == 1);
}

TEST_CASE("admission records and ids: state user resource; the id's queue source") {
  auto r = adm::record_of("accepted ada seat-1");
  REQUIRE(r);
  CHECK(r->state == "accepted");
  CHECK(r->user == "ada");
  CHECK(r->resource == "seat-1");
  CHECK_FALSE(adm::record_of("assigned ada"));
  CHECK_FALSE(adm::record_of(""));
  CHECK(adm::source_of_id(std::to_string(42 * 4096 + 17)) == 17);
  CHECK(adm::source_of_id("abc") == -1);
  CHECK(adm::source_of_id("") == -1);

  using pushonce::gateway::admission_id_of_path;
  CHECK(admission_id_of_path("/api/admission/69632") == std::string("69632"));
  CHECK_FALSE(admission_id_of_path("/api/admission/"));
  CHECK_FALSE(admission_id_of_path("/api/admission/12a"));
  CHECK_FALSE(admission_id_of_path("/api/admission/12/x"));
  CHECK_FALSE(admission_id_of_path("/api/admission/12345678901234567890"));
  CHECK(pushonce::gateway::admission_state_json("69632", "default", *r) ==
        R"({"id":"69632","user":"ada","queue":"default","resource":"seat-1","state":"accepted",)"
        R"("expires_at":null})");
}

TEST_CASE("admission options: defaults, values, and the usage errors") {
  namespace po = boost::program_options;
  po::options_description own("test");
  auto parse = [&](std::vector<const char*> words) {
    words.insert(words.begin(), "pushonce-test");
    return pushonce::parse_command_line(static_cast<int>(words.size()), words.data(), own);
  };
  auto cl = parse({});
  CHECK(cl.common.admission.key_file.empty());
  CHECK(cl.common.admission.issuer == "pushonce");
  CHECK(cl.common.admission.ttl == std::chrono::seconds(600));
  CHECK(cl.common.admission.verify_key_files.empty());

  const std::string path = "/tmp/pushonce-admission-unit-" + std::to_string(::getpid()) + ".pem";
  {
    std::ofstream out(path);
    out << pushonce::test::new_p256_private_pem();
  }
  auto given =
      parse({"--admission-key", path.c_str(), "--admission-issuer", "shop", "--admission-ttl",
             "120", "--admission-verify-keys", path.c_str(), path.c_str()});
  CHECK(given.common.admission.key_file == path);
  CHECK(given.common.admission.issuer == "shop");
  CHECK(given.common.admission.ttl == std::chrono::seconds(120));
  CHECK(given.common.admission.verify_key_files.size() == 2);
  auto setup = adm::load(given.common.admission);
  REQUIRE(setup.sign);
  CHECK(setup.verify->keys().size() == 1);  // the same key twice is published once

  CHECK_THROWS_AS(parse({"--admission-key", "/nonexistent/key.pem"}), pushonce::usage_error);
  CHECK_THROWS_AS(parse({"--admission-ttl", "0"}), pushonce::usage_error);
  CHECK_THROWS_AS(parse({"--admission-ttl", "x"}), pushonce::usage_error);
  CHECK_THROWS_AS(parse({"--admission-verify-keys", "/nonexistent.pub"}), pushonce::usage_error);
  // A file that is not a P-256 key: refused when the keys are read.
  {
    std::ofstream out(path);
    out << "not a key\n";
  }
  auto bad = parse({"--admission-key", path.c_str()});
  CHECK_THROWS_AS(adm::load(bad.common.admission), std::invalid_argument);
  std::remove(path.c_str());
}

}  // namespace test_admission_unit
