/* The same as run_module.cc through kiln's C API, from C: run_module_c PLUGIN.so MODULE.kmod. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "runtime/c_api/kiln_c.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: run_module_c PLUGIN.so MODULE.kmod\n");
    return 2;
  }
  kiln_status* status = NULL;
  if (kiln_load_plugin(argv[1], &status) != 0) {
    fprintf(stderr, "%s\n", kiln_status_message(status));
    kiln_status_free(status);
    return 1;
  }
  kiln_module* m = kiln_module_load(argv[2], 0, &status);
  if (!m) {
    fprintf(stderr, "%s\n", kiln_status_message(status));
    kiln_status_free(status);
    return 1;
  }
  int64_t n = kiln_module_input_bytes(m, 0) / (int64_t)sizeof(float);
  float* x = malloc(sizeof(float) * (size_t)n);
  for (int64_t i = 0; i < n; ++i) x[i] = (float)sin(0.37 * (double)i);
  int64_t out_n = kiln_module_output_bytes(m, 0) / (int64_t)sizeof(float);
  float* y = malloc(sizeof(float) * (size_t)out_n);
  const void* inputs[] = {x};
  void* outputs[] = {y};
  if (kiln_module_run(m, inputs, outputs, &status) != 0) {
    fprintf(stderr, "%s\n", kiln_status_message(status));
    kiln_status_free(status);
    return 1;
  }
  for (int64_t i = 0; i < out_n; ++i) printf("%.6g\n", (double)y[i]);
  free(x);
  free(y);
  kiln_module_free(m);
  return 0;
}
