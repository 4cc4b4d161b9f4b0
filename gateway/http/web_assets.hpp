#pragma once
// The browser files of gateway/web/ (demo page, client library, admin dashboard), embedded
// at build time by cmake/embed_web.cmake.

#include <string_view>
#include <vector>

namespace pushonce::gateway {

struct web_asset {
  std::string_view path;  // "/index.html", "/pushonce.js"
  std::string_view content_type;
  std::string_view body;
};

const std::vector<web_asset>& web_assets();

/// The asset at `path` ("/" is /index.html, "/admin" is /admin.html), or nullptr.
const web_asset* find_web_asset(std::string_view path);

}  // namespace pushonce::gateway
