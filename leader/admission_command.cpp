// `pushonce-leader admission verify TOKEN` (docs/protocol.md "Admission tokens"): checks the
// signature with the admission keys (--admission-key's public half, --admission-verify-keys,
// PUSHONCE_ADMISSION_SECRET), the issuer and exp, then reads the assignment's state (one
// HGET of its admission record).

#include <boost/json.hpp>
#include <chrono>
#include <cstdio>

#include "core/admission_token.hpp"
#include "core/queue_api.hpp"
#include "leader/admin.hpp"

namespace pushonce::leader {

namespace asio = boost::asio;
namespace json = boost::json;

namespace {

int admission_refused(const admin_context& ctx, const std::string& code, const std::string& why) {
  std::fprintf(stderr, "error: %s: %s\n", code.c_str(), why.c_str());
  if (ctx.out.json()) {
    json::object o{{"error", code}, {"message", why}};
    std::printf("%s\n", json::serialize(o).c_str());
  }
  return 1;
}

}  // namespace

asio::awaitable<int> run_admission(admin_context& ctx) {
  if (ctx.args.size() != 2 || ctx.args[0] != "verify")
    co_return ctx.out.usage("usage: admission verify TOKEN");
  std::shared_ptr<const admission::verifier> verifier;
  try {
    verifier = admission::load(ctx.admission).verify;
  } catch (const std::invalid_argument& e) {
    co_return ctx.out.usage(e.what());
  }
  if (verifier->keys().empty() && !ctx.admission.secret)
    co_return ctx.out.usage(
        "no admission key: give --admission-key, --admission-verify-keys or "
        "PUSHONCE_ADMISSION_SECRET");
  const long long now_s = std::chrono::duration_cast<std::chrono::seconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count();
  auto v = verifier->verify(ctx.args[1], now_s);
  if (!v.ok) co_return admission_refused(ctx, v.error.code, v.error.why);
  const auto& c = *v.ok;
  if (c.iss != ctx.admission.issuer)
    co_return admission_refused(
        ctx, "invalid", "iss \"" + c.iss.substr(0, 64) + "\" is not " + ctx.admission.issuer);
  queue_api q(ctx.conn, ctx.k, ctx.retention);
  auto rec = co_await q.admission_record(c.queue, c.jti);
  if (!rec) co_return ctx.out.fail(rec.error());
  json::value state = nullptr;
  if (rec.value()) state = json::string(rec.value()->state);
  json::object o{{"valid", true},          {"user", c.sub}, {"queue", c.queue},
                 {"resource", c.resource}, {"id", c.jti},   {"state", state}};
  co_return ctx.out.ok(o, "valid: " + c.sub + " holds " + c.resource + " of queue " + c.queue +
                              " (assignment " + c.jti + ", " +
                              (rec.value() ? rec.value()->state : std::string("no record")) + ")");
}

}  // namespace pushonce::leader
