// kiln_write_models: builds the Shi et al. 2016 benchmark models (models/shi2016.h) and the two
// forms of the sequence LSTM (models/sequence_lstm.h) and writes each as OUT_DIR/NAME.kgraph,
// printing its node and trainable parameter counts.
//
// usage: kiln_write_models OUT_DIR [NAME...]   (no NAME: all seven Shi et al. models)
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "ir/serialize.h"
#include "models/sequence_lstm.h"
#include "models/shi2016.h"

using namespace kiln;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: kiln_write_models OUT_DIR [NAME...]\nmodels:");
    for (const std::string& n : models::Shi2016ModelNames()) std::fprintf(stderr, " %s", n.c_str());
    for (const std::string& n : models::SequenceLstmNames()) std::fprintf(stderr, " %s", n.c_str());
    std::fprintf(stderr, "\n");
    return 2;
  }
  std::string out = argv[1];
  std::vector<std::string> names(argv + 2, argv + argc);
  if (names.empty()) names = models::Shi2016ModelNames();
  int failures = 0;
  for (const std::string& name : names) {
    const std::vector<std::string>& lstms = models::SequenceLstmNames();
    Result<Graph> graph = std::find(lstms.begin(), lstms.end(), name) != lstms.end()
                              ? models::BuildSequenceLstm(name)
                              : models::BuildShi2016Graph(name);
    Status saved = graph.ok() ? SaveGraph(*graph, out + "/" + name + ".kgraph") : graph.status();
    if (!saved.ok()) {
      std::fprintf(stderr, "kiln_write_models: %s: %s\n", name.c_str(),
                   saved.error().message().c_str());
      ++failures;
      continue;
    }
    std::printf("%s: %zu nodes, %lld trainable parameters -> %s/%s.kgraph\n", name.c_str(),
                graph->nodes().size(),
                static_cast<long long>(models::TrainableParameterCount(*graph)), out.c_str(),
                name.c_str());
  }
  return failures == 0 ? 0 : 1;
}
