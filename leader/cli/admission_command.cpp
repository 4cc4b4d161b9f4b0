// `pushonce-leader admission verify TOKEN` (docs/protocol.md "Admission tokens"): checks the
// signature with the admission keys (--admission-key's public half, --admission-verify-keys,
// PUSHONCE_ADMISSION_SECRET), the issuer and exp, then reads the assignment's state (one
// HGET of its admission record).

#include <boost/json.hpp>
#include <chrono>
#include <cstdio>

#include "core/admission_state.hpp"
#include "core/admission_token.hpp"
#include "core/queue_api.hpp"
#include "leader/cli/admin.hpp"

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

// The queue of admission `id`: --queue when given, else the one its source index names.
asio::awaitable<outcome<std::string>> queue_of_admission(admin_context& ctx, queue_api& q,
                                                         const std::string& id) {
  if (ctx.vm.count("queue")) co_return ctx.queue;
  const long long source = admission::source_of_id(id);
  if (source < 0) co_return failure{errc::not_found, "no admission " + id.substr(0, 64)};
  auto sources = co_await q.source_queues();
  if (!sources) co_return sources.error();
  auto it = sources.value().find(source);
  if (it == sources.value().end()) co_return failure{errc::not_found, "no admission " + id};
  co_return it->second;
}

std::string ms_text(const std::optional<long long>& ms) {
  return ms ? std::to_string(*ms) : std::string("-");
}

// `admission renew ID` / `admission release ID`: the state object.
asio::awaitable<int> run_admission_change(admin_context& ctx, bool renew) {
  queue_api q(ctx.conn, ctx.k, ctx.retention);
  const std::string id = ctx.args[1];
  auto queue = co_await queue_of_admission(ctx, q, id);
  if (!queue) co_return ctx.out.fail(queue.error());
  admission::record rec;
  if (renew) {
    auto r = co_await q.renew_admission(queue.value(), id);
    if (!r) co_return ctx.out.fail(r.error());
    rec = r.value();
  } else {
    auto r = co_await q.release_admission(queue.value(), id);
    if (!r) co_return ctx.out.fail(r.error());
    rec = {r.value().state, r.value().user, r.value().resource};
  }
  auto o = admission::state_object(id, queue.value(), rec);
  co_return ctx.out.ok(o, "admission " + id + ": " + rec.state + " (" + rec.user + ", " +
                              rec.resource + "), expires_at " + ms_text(rec.expires_at));
}

// `admission list [--queue Q] [--user U]`: the live admissions.
asio::awaitable<int> run_admission_list(admin_context& ctx) {
  queue_api q(ctx.conn, ctx.k, ctx.retention);
  std::string user = ctx.vm.count("user") ? ctx.vm["user"].as<std::string>() : std::string();
  auto r = co_await q.live_admissions(ctx.queue, user);
  if (!r) co_return ctx.out.fail(r.error());
  json::array rows;
  std::string text;
  for (const auto& a : r.value()) {
    json::object o{{"id", a.id},
                   {"user", a.user},
                   {"queue", ctx.queue},
                   {"resource", a.resource},
                   {"state", a.state}};
    o["expires_at"] = a.expires_at ? json::value(*a.expires_at) : json::value(nullptr);
    o["accept_by"] = a.accept_by ? json::value(*a.accept_by) : json::value(nullptr);
    rows.push_back(std::move(o));
    text += a.id + "  " + a.user + "  " + a.resource + "  " + a.state + "  expires_at " +
            ms_text(a.expires_at) + "\n";
  }
  if (text.empty()) text = "no live admissions in queue " + ctx.queue + "\n";
  json::object out{{"queue", ctx.queue}, {"admissions", std::move(rows)}};
  co_return ctx.out.ok(out, text);
}

}  // namespace

asio::awaitable<int> run_admission(admin_context& ctx) {
  constexpr const char* usage =
      "usage: admission verify TOKEN | renew ID | release ID | list [--queue Q] [--user U]";
  if (ctx.args.size() == 1 && ctx.args[0] == "list") co_return co_await run_admission_list(ctx);
  if (ctx.args.size() == 2 && (ctx.args[0] == "renew" || ctx.args[0] == "release"))
    co_return co_await run_admission_change(ctx, ctx.args[0] == "renew");
  if (ctx.args.size() != 2 || ctx.args[0] != "verify") co_return ctx.out.usage(usage);
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
  // A token past its exp stands while its admission is live (its lease decides online).
  const bool exp_passed = !v.ok && v.expired;
  if (!v.ok && !v.expired) co_return admission_refused(ctx, v.error.code, v.error.why);
  const auto& c = v.ok ? *v.ok : *v.expired;
  if (c.iss != ctx.admission.issuer)
    co_return admission_refused(
        ctx, "invalid", "iss \"" + c.iss.substr(0, 64) + "\" is not " + ctx.admission.issuer);
  queue_api q(ctx.conn, ctx.k, ctx.retention);
  auto rec = co_await q.admission_record(c.queue, c.jti);
  if (!rec) co_return ctx.out.fail(rec.error());
  // The record is bound to the assignment it was made for: a token whose record names another
  // user or resource does not stand for that admission.
  if (rec.value() && (rec.value()->user != c.sub || rec.value()->resource != c.resource))
    co_return admission_refused(ctx, "invalid",
                                "admission " + c.jti.substr(0, 64) +
                                    " is recorded for another user or resource than the token's");
  const bool live =
      rec.value() && (rec.value()->state == "assigned" || rec.value()->state == "accepted");
  if (exp_passed && !live) co_return admission_refused(ctx, v.error.code, v.error.why);
  json::value state = nullptr;
  if (rec.value()) state = json::string(rec.value()->state);
  json::value expires_at = nullptr;
  if (rec.value() && rec.value()->expires_at) expires_at = *rec.value()->expires_at;
  json::object o{
      {"valid", true}, {"user", c.sub},  {"queue", c.queue},         {"resource", c.resource},
      {"id", c.jti},   {"state", state}, {"expires_at", expires_at}, {"exp_passed", exp_passed}};
  co_return ctx.out.ok(o, "valid: " + c.sub + " holds " + c.resource + " of queue " + c.queue +
                              " (assignment " + c.jti + ", " +
                              (rec.value() ? rec.value()->state : std::string("no record")) + ")");
}

}  // namespace pushonce::leader
