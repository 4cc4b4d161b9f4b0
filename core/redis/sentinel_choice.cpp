#include "core/redis/sentinel_choice.hpp"

#include <fmt/format.h>

namespace pushonce::redis {

sentinel_choice::sentinel_choice(sentinel_config cfg) : cfg_(std::move(cfg)) {}

std::vector<std::size_t> sentinel_choice::order() const {
  std::vector<std::size_t> out;
  if (cfg_.sentinels.empty()) return out;
  out.push_back(preferred_);
  for (std::size_t i = 0; i < cfg_.sentinels.size(); ++i)
    if (i != preferred_) out.push_back(i);
  return out;
}

command sentinel_choice::query() const {
  return {"SENTINEL", "get-master-addr-by-name", cfg_.master_name};
}

std::optional<endpoint> sentinel_choice::on_answer(std::size_t i, const reply& r,
                                                   std::string& why) {
  if (i >= cfg_.sentinels.size()) {
    why = "no such sentinel";
    return std::nullopt;
  }
  if (r.is_error()) {
    why = fmt::format("error reply: {}", r.str);
    return std::nullopt;
  }
  if (r.is_nil()) {
    why = fmt::format("no master named '{}'", cfg_.master_name);
    return std::nullopt;
  }
  if (!r.is_array() || r.elements.size() != 2 || !r.at(0).is_string() || r.at(0).str.empty()) {
    why = "malformed answer";
    return std::nullopt;
  }
  auto port = r.at(1).as_int();
  if (!port || *port < 1 || *port > 65535) {
    why = "malformed port in the answer";
    return std::nullopt;
  }
  // The master logs in like the sentinel that named it was told to (the URL's credentials),
  // over TLS when the URL says so; it always has database 0.
  endpoint master = cfg_.sentinels[i];
  master.host = r.at(0).str;
  master.port = static_cast<std::uint16_t>(*port);
  master.db = 0;
  preferred_ = i;
  return master;
}

bool sentinel_choice::is_master(const reply& role) {
  return role.is_array() && !role.elements.empty() && role.at(0).is_string() &&
         role.at(0).str == "master";
}

}  // namespace pushonce::redis
