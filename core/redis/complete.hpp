#pragma once
// Completes a type-erased handler on its own executor. Boost 1.81's any_completion_handler
// must be invoked as an rvalue: wrapped in asio::append it is called as an lvalue and
// re-wraps itself until the stack overflows.

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/dispatch.hpp>
#include <tuple>

namespace pushonce::redis::detail {

/// Move-assigns a type-erased handler. Boost 1.81's operator=(any_completion_handler&&)
/// wraps `other` as an lvalue and recurses forever; swap is safe.
template <typename Signature>
void assign(boost::asio::any_completion_handler<Signature>& target,
            boost::asio::any_completion_handler<Signature>&& source) {
  boost::asio::any_completion_handler<Signature> tmp(std::move(source));
  target.swap(tmp);
}

template <typename Handler, typename Fallback, typename... Args>
void complete(Handler&& handler, const Fallback& fallback, Args&&... args) {
  auto ex = boost::asio::get_associated_executor(handler, fallback);
  boost::asio::dispatch(ex, [h = std::forward<Handler>(handler),
                             tup = std::make_tuple(std::forward<Args>(args)...)]() mutable {
    std::apply([&](auto&&... a) { std::move(h)(std::move(a)...); }, std::move(tup));
  });
}

}  // namespace pushonce::redis::detail
