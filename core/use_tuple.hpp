#pragma once
// The completion token of every coroutine that looks at an operation's error itself:
// `auto [ec, n] = co_await op(..., use_tuple);` instead of an exception.

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace pushonce {

inline constexpr auto use_tuple = boost::asio::as_tuple(boost::asio::use_awaitable);

}  // namespace pushonce
