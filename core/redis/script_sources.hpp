#pragma once
// The Lua scripts embedded at build time (see cmake/embed_scripts.cmake).

#include <string_view>
#include <vector>

namespace pushonce::redis {

struct script_source {
  std::string_view name;  // file stem: "claim" for lua/claim.lua
  std::string_view text;
};

const std::vector<script_source>& embedded_scripts();

}  // namespace pushonce::redis
