#include "core/errc.hpp"

#include <string>

#include "core/queue_refusals.hpp"

namespace pushonce {
namespace {

struct entry {
  errc e;
  std::string_view word;     // the contract's code
  std::string_view meaning;  // error_code::message()
};

constexpr entry table[] = {
    {errc::bad_request, "bad_request", "bad request"},
    {errc::usage, "usage", "bad command line"},
    {errc::too_large, "too_large", "over the size limit"},
    {errc::rate_limited, "rate_limited", "over the rate limit"},
    {errc::unauthorized, "unauthorized", "missing or wrong credentials"},
    {errc::auth_failed, "auth_failed", "hello refused"},
    {errc::forbidden, "forbidden", "not allowed"},
    {errc::no_secret, "no_secret", "no JWT secret configured"},
    {errc::unknown_op, "unknown_op", "unknown op"},
    {errc::not_found, "not_found", "not found"},
    {errc::not_queued, "not_queued", "not in the queue"},
    {errc::not_assigned, "not_assigned", "no assignment held"},
    {errc::not_dead, "not_dead", "the message is not dead-lettered"},
    {errc::already_queued, "already_queued", "already in the queue"},
    {errc::already_assigned, "already_assigned", "already holds an assignment"},
    {errc::exists, "exists", "already exists"},
    {errc::exhausted, "exhausted", "no index left"},
    {errc::fenced, "fenced", "a newer leader has acted on the queue"},
    {errc::overloaded, "overloaded", "over the connection limits"},
    {errc::redis_unavailable, "redis_unavailable", "Redis did not answer or refuses work"},
    {errc_closed, "closed", "the queue is closed"},
    {errc_full, "full", "the queue is full"},
    {errc_expired, "expired", "the admission has expired"},
    {errc_released, "released", "the admission was released"},
    {errc::internal, "internal", "internal error"},
};

const entry* find(errc e) noexcept {
  for (const auto& t : table)
    if (t.e == e) return &t;
  return nullptr;
}

class category final : public boost::system::error_category {
 public:
  const char* name() const noexcept override { return "pushonce"; }
  std::string message(int value) const override {
    auto* t = find(static_cast<errc>(value));
    return t ? std::string(t->meaning) : "unknown pushonce error";
  }
};

}  // namespace

const boost::system::error_category& errc_category() noexcept {
  static const category instance;
  return instance;
}

boost::system::error_code make_error_code(errc e) noexcept {
  return {static_cast<int>(e), errc_category()};
}

std::string_view code_text(errc e) noexcept {
  auto* t = find(e);
  return t ? t->word : "internal";
}

std::optional<errc> errc_of_code(std::string_view code) noexcept {
  for (const auto& t : table)
    if (t.word == code) return t.e;
  return std::nullopt;
}

}  // namespace pushonce
