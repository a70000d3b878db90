// Which device code of a cuda module a GPU loads (runtime/module/module_file.h, SelectDeviceCode):
// a cubin of its own major architecture when one fits, else the newest PTX it can JIT-compile,
// else a refusal naming both sides.
#include <catch2/catch.hpp>

#include "runtime/module/module_file.h"

namespace kiln {
namespace {

std::string Pick(const std::map<int, ModuleDeviceCode>& code, int gpu) {
  Result<SelectedDeviceCode> picked = SelectDeviceCode(code, gpu, "GPU");
  if (!picked.ok()) return picked.error().message();
  return (picked->cubin ? "cubin " : "ptx ") + std::to_string(picked->sm) + " " + *picked->code;
}

TEST_CASE("cuda modules: a GPU loads the cubin of its major architecture, else the newest PTX",
          "[cuda][aot]") {
  const std::map<int, ModuleDeviceCode> both = {{80, {"P80", "C80"}}, {90, {"P90", "C90"}}};
  CHECK(Pick(both, 80) == "cubin 80 C80");
  CHECK(Pick(both, 86) == "cubin 80 C80");  // same major, newer minor: the sm_80 cubin runs
  CHECK(Pick(both, 89) == "cubin 80 C80");
  CHECK(Pick(both, 90) == "cubin 90 C90");
  CHECK(Pick(both, 100) == "ptx 90 P90");  // a newer major: the driver JIT-compiles the PTX
  CHECK(Pick(both, 120) == "ptx 90 P90");
  const std::map<int, ModuleDeviceCode> ptx_only = {{80, {"P80", ""}}, {90, {"P90", ""}}};
  CHECK(Pick(ptx_only, 90) == "ptx 90 P90");
  CHECK(Pick(ptx_only, 86) == "ptx 80 P80");
  const std::map<int, ModuleDeviceCode> sm90 = {{90, {"P90", "C90"}}};
  CHECK(Pick(sm90, 80) == "the module has code for sm_90 only, which GPU (sm_80) cannot run");
  CHECK(Pick(both, 75) ==
        "the module has code for sm_80, sm_90 only, which GPU (sm_75) cannot run");
}

}  // namespace
}  // namespace kiln
