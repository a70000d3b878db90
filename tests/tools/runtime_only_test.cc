// The one rule that must never bend (DESIGN.md): runtime/ never includes or links LLVM, MLIR or
// compiler/, and neither does what a deployed program links (the kiln_cli library, kilnrt).
// Checked on the sources (every #include) and on the built kilnrt (its shared libraries by ldd,
// its symbols by nm).
#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace {

std::string Output(const std::string& command) {
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  char buffer[4096];
  while (size_t n = fread(buffer, 1, sizeof(buffer), pipe)) out.append(buffer, n);
  REQUIRE(pclose(pipe) == 0);
  return out;
}

bool IncludesCompiler(const std::string& line) {
  if (line.rfind("#include", 0) != 0) return false;
  for (const char* banned : {"\"llvm/", "<llvm/", "\"mlir/", "<mlir/", "\"compiler/", "<compiler/"})
    if (line.find(banned) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("runtime-only: runtime/ and the runtime tools include nothing of the compiler",
          "[runtime-only]") {
  namespace fs = std::filesystem;
  const fs::path root = KILN_SOURCE_DIR;
  std::vector<fs::path> files;
  for (const auto& entry : fs::recursive_directory_iterator(root / "runtime"))
    if (entry.is_regular_file()) files.push_back(entry.path());
  for (const char* f : {"tools/command.h", "tools/command.cc", "tools/flags.h", "tools/flags.cc",
                        "tools/run_module.h", "tools/run_module.cc", "tools/kilnrt/kilnrt_main.cc"})
    files.push_back(root / f);
  int checked = 0;
  for (const fs::path& file : files) {
    std::string ext = file.extension().string();
    if (ext != ".h" && ext != ".cc") continue;
    std::ifstream in(file);
    REQUIRE(in.good());
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
      INFO(file.string() << ":" << n << ": " << line);
      CHECK_FALSE(IncludesCompiler(line));
    }
    ++checked;
  }
  CHECK(checked > 40);
}

TEST_CASE("runtime-only: kilnrt links no LLVM, MLIR or compiler code", "[runtime-only]") {
  const std::string kilnrt = KILNRT_BINARY;
  std::string libraries = Output("ldd '" + kilnrt + "'");
  INFO(libraries);
  CHECK(libraries.find("libc.so") != std::string::npos);  // ldd did list the libraries
  // Library names, not paths: clang's OpenMP runtime lives in /usr/lib/llvm-14/lib/libomp.so.
  // libcuda too: the cuda backend loads the driver at run time, so kilnrt starts without one.
  for (const char* banned : {"libLLVM", "libMLIR", "libmlir", "libclang", "libcuda"})
    CHECK(libraries.find(banned) == std::string::npos);
  std::string symbols = Output("nm -C --defined-only '" + kilnrt + "'");
  CHECK(symbols.find("kiln::Module::Run") != std::string::npos);  // nm did list the symbols
  for (const char* banned : {"kiln::compiler::", "mlir::", "llvm::"})
    CHECK(symbols.find(banned) == std::string::npos);
}
