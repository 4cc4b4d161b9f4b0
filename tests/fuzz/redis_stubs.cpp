// The Redis calls core/publisher.cpp also holds, for fuzz_publish_api, which only parses and
// validates bodies: never called (a call stops the run at once).
#include <cstdlib>

#include "core/lua/rate_limit.hpp"
#include "core/redis/connection.hpp"
#include "core/redis/scripts.hpp"

namespace pushonce::redis {

const script& get_script(std::string_view) {
  std::abort();
}

boost::asio::awaitable<result> connection::exec(command) {
  std::abort();
}

boost::asio::awaitable<std::vector<result>> eval_all(connection&, const script&,
                                                     std::vector<command>) {
  std::abort();
}

}  // namespace pushonce::redis

namespace pushonce::lua {

boost::asio::awaitable<outcome<rate_decision>> take_tokens(redis::connection&, std::string,
                                                           long long, long long, long long) {
  std::abort();
}

}  // namespace pushonce::lua
