// Internal: one registration function per op family, called once by OpRegistry::Global().
// (Explicit calls rather than static initializers, which a static library's linker would drop.)
#pragma once

namespace kiln {
class OpRegistry;
void RegisterStateOps(OpRegistry& r);
void RegisterMathOps(OpRegistry& r);
void RegisterLinalgOps(OpRegistry& r);
void RegisterNnOps(OpRegistry& r);
void RegisterDetectionOps(OpRegistry& r);          // called by RegisterNnOps
void RegisterMaxPoolWithArgmaxOps(OpRegistry& r);  // called by RegisterNnOps
void RegisterDeterminantOps(OpRegistry& r);        // called by RegisterLinalgOps
void RegisterReduceOps(OpRegistry& r);
void RegisterArrayOps(OpRegistry& r);
void RegisterUniqueOps(OpRegistry& r);         // called by RegisterArrayOps
void RegisterTextOps(OpRegistry& r);           // called by RegisterArrayOps
void RegisterSequenceOps(OpRegistry& r);       // called by RegisterArrayOps
void RegisterArrayLikeOps(OpRegistry& r);      // called by RegisterArrayOps
void RegisterArrayElementsOps(OpRegistry& r);  // called by RegisterArrayOps
void RegisterDeferredOps(OpRegistry& r);
void RegisterControlOps(OpRegistry& r);
void RegisterCollectiveOps(OpRegistry& r);
}  // namespace kiln
