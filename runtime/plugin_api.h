// Writing a plugin: ops defined outside kiln, in a shared library that a program loads at run
// time (kiln --plugin, kilnrt --plugin, SessionOptions::plugins, kiln::LoadPlugin in
// runtime/plugins.h). A plugin op is a kiln op like any other: a schema with shape and dtype
// inference, a gradient built with the graph builder (or "not differentiable"), a precision
// list, a FLOP count, and a CPU kernel.
//
//   #include "runtime/plugin_api.h"
//
//   KILN_PLUGIN("my_ops", registrar) {
//     registrar.AddOp(kiln::OpDefBuilder("Swish", "plugin")
//                         .Input("x", "T").Output("y").Types("T", kiln::FloatTypes())
//                         .Infer(kiln::SameAsInput(0))
//                         .Grad(SwishGradient)              // a kiln::GradFn
//                         .Precision(kiln::PrecisionList::kFollow)
//                         .Flops(kiln::FlopsPerOutputElement(4))
//                         .Build(),
//                     SwishKernel);                          // a kiln::reference::KernelFn
//   }
//
// Contract:
// - Build the library against kiln's headers, with the compiler and flags kiln was built with,
//   and without linking kiln's libraries (CMake: add_library(my_ops MODULE ...) with kiln's
//   include directory; models/swish_plugin.cc is an example). Its references to kiln resolve to
//   the program that loads it: kiln, kilnrt, kiln_tests and programs linking kiln::kiln or
//   kiln::runtime export their symbols for it.
// - Op names must be new (not kiln's, not another plugin's); an op must name every facet above,
//   or the plugin is refused with the op and what it lacks. All ops of a plugin are registered
//   or none.
// - The kernel receives inputs and preallocated outputs as kiln's reference kernels do
//   (runtime/reference/kernel.h); it must return an error for bad values, never crash. Every
//   backend runs it on the host: compiled plans call it as a step of their own, with their
//   buffers planned around it (the cuda backends copy its operands to and from the device).
// - A graph or module that uses a plugin's ops records the plugin's name; loading one without
//   the plugin is refused naming it.
// - Plugins stay loaded until the process exits. A plugin built for another plugin API version
//   (kPluginApiVersion) is refused.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "ir/op_registry.h"
#include "runtime/reference/kernel.h"

namespace kiln {

inline constexpr int kPluginApiVersion = 1;

class PluginRegistrar {
 public:
  struct Entry {
    OpDef def;
    reference::KernelFn kernel;
  };

  explicit PluginRegistrar(std::string plugin) : plugin_(std::move(plugin)) {}
  // Adds an op with its CPU kernel (checked and registered when the plugin's registration
  // returns).
  void AddOp(OpDef def, reference::KernelFn cpu_kernel) {
    entries_.push_back({std::move(def), std::move(cpu_kernel)});
  }
  const std::string& plugin() const { return plugin_; }
  std::vector<Entry>& entries() { return entries_; }

 private:
  std::string plugin_;
  std::vector<Entry> entries_;
};

}  // namespace kiln

// Defines the entry points kiln looks for in a plugin library, and the registration body.
#define KILN_PLUGIN(NAME, REGISTRAR)                                                             \
  static void KilnPluginRegister(::kiln::PluginRegistrar& REGISTRAR);                            \
  extern "C" __attribute__((visibility("default"))) int kiln_plugin_api_version() {              \
    return ::kiln::kPluginApiVersion;                                                            \
  }                                                                                              \
  extern "C" __attribute__((visibility("default"))) const char* kiln_plugin_name() {             \
    return NAME;                                                                                 \
  }                                                                                              \
  extern "C" __attribute__((visibility("default"))) void kiln_plugin_register(void* registrar) { \
    KilnPluginRegister(*static_cast<::kiln::PluginRegistrar*>(registrar));                       \
  }                                                                                              \
  static void KilnPluginRegister(::kiln::PluginRegistrar& REGISTRAR)
