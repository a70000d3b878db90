// Runs a compiled module with kiln's runtime alone (no compiler linked):
//   run_module PLUGIN.so MODULE.kmod [INPUT_OUT.npy]
// The input is x[i] = sin(0.37 i) for every element of the module's first input (f32), also
// written to INPUT_OUT.npy when given; prints every output element, one per line.
#include <cmath>
#include <cstdio>

#include "ir/io/npy.h"
#include "runtime/module/module.h"
#include "runtime/plugins.h"

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) {
    std::fprintf(stderr, "usage: run_module PLUGIN.so MODULE.kmod [INPUT_OUT.npy]\n");
    return 2;
  }
  if (kiln::Status s = kiln::LoadPlugin(argv[1]); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.error().ToString().c_str());
    return 1;
  }
  kiln::Result<std::unique_ptr<kiln::Module>> module = kiln::Module::Load(argv[2]);
  if (!module.ok()) {
    std::fprintf(stderr, "%s\n", module.error().ToString().c_str());
    return 1;
  }
  const kiln::ModuleTensorSpec& spec = (*module)->inputs().at(0);
  kiln::Result<kiln::Tensor> x = kiln::Tensor::Create(kiln::f32, spec.type.shape);
  if (!x.ok()) return 1;
  for (int64_t i = 0; i < x->num_elements(); ++i) x->SetDouble(i, std::sin(0.37 * i));
  if (argc == 4 && !kiln::WriteNpy(argv[3], *x).ok()) return 1;
  kiln::Result<std::vector<kiln::Tensor>> out = (*module)->Run({{spec.name, *x}});
  if (!out.ok()) {
    std::fprintf(stderr, "%s\n", out.error().ToString().c_str());
    return 1;
  }
  for (const kiln::Tensor& t : *out)
    for (double v : t.ToDoubles()) std::printf("%.6g\n", v);
  return 0;
}
