// The seven networks of Shi et al. 2016, "Benchmarking State-of-the-Art Deep Learning Software
// Tools" (definitions as in the authors' dlbench code), as kiln training graphs:
//
//   name        input(s)                         network
//   fcn-s       x f32[-1, 26752]                 26752-2048-2048-2048-26752, sigmoid hidden
//   alexnet-s   x f32[-1, 3, 224, 224]           ImageNet AlexNet without LRN and dropout
//   resnet-50   x f32[-1, 3, 224, 224]           bottleneck ResNet [3, 4, 6, 3], BN, 1000 classes
//   fcn-r       x f32[-1, 784]                   784-2048-4096-1024-10, sigmoid hidden
//   alexnet-r   x f32[-1, 3, 32, 32]             cuda-convnet "18%" CIFAR-10 net (no LRN)
//   resnet-56   x f32[-1, 3, 32, 32]             CIFAR ResNet, 3 x 9 basic blocks, BN, 10 classes
//   lstm        tokens i64[-1, 32]               PTB: embedding 10000x256, 2 LSTM layers of 256
//                                                unrolled over 32 steps, 10000-way softmax per step
//
// Every graph has input "labels" (i64[-1]; i64[-1, 32] for lstm), outputs "logits" (f32[-1, C];
// for lstm the per-step logits flattened to [-1, 10000], rows in (example, step) order) and
// "loss" (scalar mean softmax cross-entropy). BatchNorm layers are built in training mode.
// Variables are seeded from `seed`, so a model builds to the same initial weights every time.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/builder.h"
#include "ir/graph.h"
#include "ir/status.h"

namespace kiln::models {

// One graph input of a model.
struct ModelInput {
  std::string name;
  DType dtype;
  Shape shape;  // -1 for the batch dim
};

// What a model is: its name, a one-line description and its graph inputs (labels last).
struct ModelSpec {
  std::string name;
  std::string description;
  std::vector<ModelInput> inputs;
  int64_t num_classes = 0;
};

// A built model: its spec and the builder Values of its inputs and outputs.
struct Shi2016Model {
  ModelSpec spec;
  std::vector<Value> inputs;  // in spec.inputs order
  Value logits;
  Value loss;
};

// The model names, in the paper's order.
const std::vector<std::string>& Shi2016ModelNames();
// The spec of a model by name (an error names the known models).
Result<ModelSpec> Shi2016Spec(const std::string& name);

Shi2016Model BuildFcnS(GraphBuilder& g, int64_t seed = 1);
Shi2016Model BuildAlexNetS(GraphBuilder& g, int64_t seed = 1);
Shi2016Model BuildResNet50(GraphBuilder& g, int64_t seed = 1);
Shi2016Model BuildFcnR(GraphBuilder& g, int64_t seed = 1);
Shi2016Model BuildAlexNetR(GraphBuilder& g, int64_t seed = 1);
Shi2016Model BuildResNet56(GraphBuilder& g, int64_t seed = 1);
Shi2016Model BuildLstm(GraphBuilder& g, int64_t seed = 1);

// Builds the model `name` into `g` (errors: an unknown name).
Result<Shi2016Model> BuildShi2016(GraphBuilder& g, const std::string& name, int64_t seed = 1);
// Builds and verifies the model `name` as a graph.
Result<Graph> BuildShi2016Graph(const std::string& name, int64_t seed = 1);

// Elements of the trainable Variables of a graph (BatchNorm running statistics and optimizer
// slots are not trainable), the "parameter count" papers report.
int64_t TrainableParameterCount(const Graph& graph);

namespace internal {
// Shared by the model files: the placeholders of `spec`, and the loss/outputs of a classifier.
std::vector<Value> MakeInputs(GraphBuilder& g, const ModelSpec& spec);
Shi2016Model FinishClassifier(GraphBuilder& g, ModelSpec spec, std::vector<Value> inputs,
                              Value logits, Value labels);
}  // namespace internal

}  // namespace kiln::models
