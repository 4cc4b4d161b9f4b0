#include "leader/cli/admin.hpp"

#include <boost/json.hpp>

#include "core/log.hpp"
#include "core/queue_api.hpp"
#include "core/queue_pace.hpp"

namespace pushonce::leader {

namespace asio = boost::asio;
namespace json = boost::json;

int exit_for(const failure& f) {
  return f.code == errc::bad_request || f.code == errc::usage ? 2 : 1;
}

int report_failure(admin_context& ctx, const failure& f) {
  return ctx.out.fail(f, exit_for(f));
}

bool want_args(admin_context& ctx, std::size_t n, const char* usage, int& code) {
  if (ctx.args.size() == n) return true;
  code = ctx.out.usage(std::string("usage: pushonce-leader ") + usage);
  return false;
}

namespace {

asio::awaitable<int> join(admin_context& ctx, queue_api& q) {
  int code = 0;
  if (!want_args(ctx, 1, "join USER [--queue Q]", code)) co_return code;
  auto user = ctx.args[0];
  auto r = co_await q.join(ctx.queue, user);
  if (!r) co_return report_failure(ctx, r.error());
  auto absent = co_await q.joined_without_session(user);
  if (!absent) log::warn("join: {} is not counted absent: {}", user, absent.error().message);
  if (r.value().opens_at) {
    json::object pre{{"user", user},
                     {"queue", ctx.queue},
                     {"position", nullptr},
                     {"ticket", nullptr},
                     {"opens_at", *r.value().opens_at}};
    co_return ctx.out.ok(pre, user + " is in the pre-queue of " + ctx.queue +
                                  " until it opens at " + std::to_string(*r.value().opens_at) +
                                  " (ms since the epoch)");
  }
  json::object o{{"user", user},
                 {"queue", ctx.queue},
                 {"position", r.value().position},
                 {"ticket", r.value().ticket}};
  co_return ctx.out.ok(o, user + " joined queue " + ctx.queue + " at position " +
                              std::to_string(r.value().position) + " (ticket " +
                              std::to_string(r.value().ticket) + ")");
}

asio::awaitable<int> leave(admin_context& ctx, queue_api& q) {
  int code = 0;
  if (!want_args(ctx, 1, "leave USER [--queue Q]", code)) co_return code;
  auto user = ctx.args[0];
  auto r = co_await q.leave(ctx.queue, user);
  if (!r) co_return report_failure(ctx, r.error());
  json::object o{{"user", user}, {"queue", ctx.queue}, {"removed", true}};
  co_return ctx.out.ok(o, user + " left queue " + ctx.queue);
}

asio::awaitable<int> position(admin_context& ctx, queue_api& q) {
  int code = 0;
  if (!want_args(ctx, 1, "position USER [--queue Q]", code)) co_return code;
  auto user = ctx.args[0];
  auto r = co_await q.standing(ctx.queue, user);
  if (!r) co_return report_failure(ctx, r.error());
  const auto& st = r.value();
  if (st.position <= 0 && !st.prequeued)
    co_return report_failure(ctx, {errc::not_queued, user + " is not in queue " + ctx.queue});
  if (st.position <= 0) {
    json::object pre{{"user", user},
                     {"queue", ctx.queue},
                     {"position", nullptr},
                     {"eta_s", nullptr},
                     {"opens_at", st.opens_at ? json::value(*st.opens_at) : json::value(nullptr)}};
    co_return ctx.out.ok(pre, user + " is in the pre-queue of " + ctx.queue);
  }
  // The estimated wait: null when the queue's pace cannot be read either.
  std::optional<long long> eta;
  auto read = read_queue_pace(ctx.conn, ctx.k, ctx.queue);  // named: GCC 12 and co_await
  auto pace = co_await std::move(read);
  if (pace) eta = pace.value().eta_s(st.position, pace_now_ms());
  json::object o{{"user", user},
                 {"queue", ctx.queue},
                 {"position", st.position},
                 {"eta_s", eta ? json::value(*eta) : json::value(nullptr)}};
  std::string text =
      user + " is at position " + std::to_string(st.position) + " in queue " + ctx.queue;
  if (eta) text += " (about " + std::to_string(*eta) + " s to wait)";
  co_return ctx.out.ok(o, text);
}

asio::awaitable<int> accept(admin_context& ctx, queue_api& q) {
  int code = 0;
  if (!want_args(ctx, 1, "accept USER [--queue Q] [--id ASSIGNMENT]", code)) co_return code;
  auto user = ctx.args[0];
  std::string id = ctx.vm.count("id") ? ctx.vm["id"].as<std::string>() : "";
  auto r = co_await q.accept(ctx.queue, user, id);
  if (!r) co_return report_failure(ctx, r.error());
  json::object o{{"user", user},
                 {"queue", ctx.queue},
                 {"id", r.value().id},
                 {"resource", r.value().resource},
                 {"accepted", true}};
  if (r.value().expires_at) o["expires_at"] = *r.value().expires_at;
  co_return ctx.out.ok(
      o, user + " accepted " + r.value().resource + " (assignment " + r.value().id + ")");
}

asio::awaitable<int> list_queue(admin_context& ctx, queue_api& q) {
  int code = 0;
  if (!want_args(ctx, 0, "queue [--queue Q] [--limit N] [--offset N]", code)) co_return code;
  long long limit = ctx.vm.count("limit") ? ctx.vm["limit"].as<long long>() : 100;
  long long offset = ctx.vm.count("offset") ? ctx.vm["offset"].as<long long>() : 0;
  if (limit <= 0) co_return ctx.out.usage("--limit must be a positive number");
  if (offset < 0) co_return ctx.out.usage("--offset must not be negative");
  auto r = co_await q.list(ctx.queue, limit, offset);
  if (!r) co_return report_failure(ctx, r.error());
  json::array users;
  std::string text = "queue " + ctx.queue + ": " + std::to_string(r.value().length) + " waiting";
  long long i = offset;
  for (auto& u : r.value().users) {
    users.emplace_back(u);
    text += "\n" + std::to_string(++i) + ". " + u;
  }
  json::object o{{"queue", ctx.queue},
                 {"length", r.value().length},
                 {"offset", offset},
                 {"users", std::move(users)}};
  co_return ctx.out.ok(o, text);
}

}  // namespace

asio::awaitable<int> run_admin(admin_context& ctx, std::string command) {
  queue_api q(ctx.conn, ctx.k, ctx.retention);
  if (command == "join") co_return co_await join(ctx, q);
  if (command == "leave") co_return co_await leave(ctx, q);
  if (command == "position") co_return co_await position(ctx, q);
  if (command == "accept") co_return co_await accept(ctx, q);
  if (command == "queue") co_return co_await list_queue(ctx, q);
  if (command == "resource") co_return co_await run_resource(ctx, q);
  if (command == "publish") co_return co_await run_publish(ctx);
  if (command == "status") co_return co_await run_status(ctx);
  if (command == "dead-letters") co_return co_await run_dead_letters(ctx);
  if (command == "trace") co_return co_await run_trace(ctx);
  if (command == "token") co_return co_await run_token(ctx);
  if (command == "settings" || command == "pause" || command == "resume" || command == "close" ||
      command == "open")
    co_return co_await run_queue_controls(ctx, command);
  if (command == "admission") co_return co_await run_admission(ctx);
  if (command == "report") co_return co_await run_report(ctx);
  if (command == "disconnect") co_return co_await run_disconnect(ctx);
  co_return ctx.out.usage("unknown command '" + command + "' (see pushonce-leader --help)");
}

}  // namespace pushonce::leader
