#pragma once
// The one asynchronous step of Redis Sentinel support: ask the sentinels, in the order
// sentinel_choice gives, where the master is. Each sentinel is asked over a fresh connection
// (the URL's credentials first; without credentials when that sentinel refuses them, since a
// sentinel's own auth may differ from the master's), with opts.connect_timeout to connect and
// again to answer. The first well-formed answer wins. redis::link calls this before every
// (re)connect; the ROLE check happens on the connection itself (resp_stream::connect).

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <optional>
#include <string>

#include "core/redis/endpoint.hpp"

namespace pushonce::redis {

class sentinel_choice;

/// The master the sentinels name (with the URL's credentials and TLS), or std::nullopt with
/// `why` saying what each sentinel answered.
boost::asio::awaitable<std::optional<endpoint>> find_master(boost::asio::any_io_executor ex,
                                                            const connection_options& opts,
                                                            sentinel_choice& choice,
                                                            std::string& why);

}  // namespace pushonce::redis
