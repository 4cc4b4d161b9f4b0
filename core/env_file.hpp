#pragma once
// The installed environment file (/etc/pushonce/pushonce.env, systemd's EnvironmentFile
// syntax) for the admin CLI on a production host: the units get it from systemd, a CLI
// call started by hand reads it itself (`--env-file FILE`, by default that file when it
// exists and can be read), so that `pushonce-leader status` talks to the namespace and the
// Redis the services use.

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pushonce {

/// KEY=VALUE lines; blank lines and lines starting with # or ; are skipped; a value in
/// single or double quotes loses them; "export " before a key is allowed. A line that is
/// none of these is an error naming its number (std::invalid_argument).
std::vector<std::pair<std::string, std::string>> parse_env_file(std::string_view text);

/// The variables of `parsed` the CLI takes: PUSHONCE_* only, not the log settings (the
/// CLI's output stays one plain line) and not those the environment already sets
/// (`is_set`), which win.
std::vector<std::pair<std::string, std::string>> env_file_assignments(
    const std::vector<std::pair<std::string, std::string>>& parsed,
    bool (*is_set)(const char* name));

/// Reads `path` (or, when `path` is empty, /etc/pushonce/pushonce.env if readable) and
/// sets what env_file_assignments keeps. Then, when no Redis address is set, the file's
/// directory's secrets/redis_url (and secrets/jwt_secret, for `token`) are used when this
/// user can read them (root: they are root-only). Returns the file read (none: nullopt).
/// Throws usage_error when an explicit file cannot be read or parsed.
std::optional<std::string> load_env_file(const std::string& path);

}  // namespace pushonce
