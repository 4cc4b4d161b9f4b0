#pragma once
// A Redis reply, copied out of the RESP parser so it outlives the parser's buffers.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pushonce::redis {

/// One command: the words as Redis receives them ("EVALSHA", sha, "2", key, ...).
using command = std::vector<std::string>;

struct reply {
  enum class type { nil, integer, string, status, error, array };

  type kind = type::nil;
  long long integer = 0;
  std::string str;  // bulk/status/error text
  std::vector<reply> elements;

  bool is_nil() const { return kind == type::nil; }
  bool is_error() const { return kind == type::error; }
  bool is_array() const { return kind == type::array; }
  bool is_string() const { return kind == type::string || kind == type::status; }

  /// The integer value of an integer reply or of a string of decimal digits.
  std::optional<long long> as_int() const;
  /// The first word of an error reply: the error code ("NOSCRIPT", "already_queued").
  std::string_view error_code() const;
  /// The error text after the code ("" when there is none).
  std::string_view error_message() const;
  /// Element i of an array reply, or a nil reply when out of range / not an array.
  const reply& at(std::size_t i) const;
  /// In a flat name/value array (a stream entry's fields, HGETALL, XINFO): the value after
  /// `name`, or a nil reply when absent.
  const reply& field(std::string_view name) const;

  static reply make_error(std::string text);
};

}  // namespace pushonce::redis
