#pragma once
// A fresh directory under $TMPDIR (or /tmp), removed with everything in it on destruction
// unless PUSHONCE_KEEP_TEST_DIRS is set (for looking at logs after a failure).

#include <string>
#include <string_view>

namespace pushonce::test {

class temp_dir {
 public:
  /// Creates <tmp>/<prefix>-XXXXXX with mkdtemp; throws std::system_error on failure.
  explicit temp_dir(std::string_view prefix = "pushonce-test");
  ~temp_dir();
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;

  const std::string& path() const { return path_; }
  /// path() + "/" + name.
  std::string file(std::string_view name) const;

 private:
  std::string path_;
};

/// The whole content of a file ("" when it cannot be read).
std::string read_file(const std::string& path);

}  // namespace pushonce::test
