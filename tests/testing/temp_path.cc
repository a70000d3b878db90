#include "tests/testing/temp_path.h"

#include <unistd.h>

#include <filesystem>
#include <system_error>

namespace kiln::testing {

std::string TempPath(const std::string& name) {
  struct TempDir {
    std::filesystem::path path =
        std::filesystem::temp_directory_path() / ("kiln_tests_" + std::to_string(::getpid()));
    TempDir() { std::filesystem::create_directories(path); }
    ~TempDir() {
      std::error_code ignored;
      std::filesystem::remove_all(path, ignored);
    }
  };
  static TempDir dir;
  return (dir.path / name).string();
}

}  // namespace kiln::testing
