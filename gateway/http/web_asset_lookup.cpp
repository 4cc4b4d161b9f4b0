#include "gateway/http/web_assets.hpp"

namespace pushonce::gateway {

const web_asset* find_web_asset(std::string_view path) {
  if (path == "/") path = "/index.html";
  if (path == "/admin") path = "/admin.html";
  for (const auto& a : web_assets())
    if (a.path == path) return &a;
  return nullptr;
}

}  // namespace pushonce::gateway
