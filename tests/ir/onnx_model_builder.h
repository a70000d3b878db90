// Test helper: small hand-made ONNX models (ModelProto) for the importer tests, and importing one
// (a failed import fails the test, with the importer's error).
#pragma once

#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "ir/io/onnx_tensor.h"
#include "ir/onnx/import.h"
#include "ir/tensor.h"
#include "proto/onnx.pb.h"

namespace kiln::testing {

class OnnxModel {
 public:
  explicit OnnxModel(int64_t opset = 17) {
    model_.set_ir_version(8);
    auto* o = model_.add_opset_import();
    o->set_domain("");
    o->set_version(opset);
  }
  // A graph input of ONNX element type `elem` (1 FLOAT, 7 INT64); dims < 0 are symbolic.
  OnnxModel& Input(const std::string& name, int elem, const std::vector<int64_t>& dims) {
    ValueInfo(graph()->add_input(), name, elem, dims);
    return *this;
  }
  OnnxModel& Output(const std::string& name, int elem = 1) {
    auto* vi = graph()->add_output();
    vi->set_name(name);
    vi->mutable_type()->mutable_tensor_type()->set_elem_type(elem);
    return *this;
  }
  // A graph output with a declared shape; dims < 0 are symbolic.
  OnnxModel& Output(const std::string& name, int elem, const std::vector<int64_t>& dims) {
    ValueInfo(graph()->add_output(), name, elem, dims);
    return *this;
  }
  OnnxModel& Initializer(const std::string& name, const Tensor& t) {
    OnnxTensorToProto(t, name, graph()->add_initializer());
    return *this;
  }
  onnx::TensorProto* RawInitializer() { return graph()->add_initializer(); }
  // Adds a node; returns it so that attributes can be added with the Attr helpers below.
  onnx::NodeProto* Node(const std::string& op, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs, const std::string& name = "") {
    auto* n = graph()->add_node();
    n->set_op_type(op);
    if (!name.empty()) n->set_name(name);
    for (const auto& i : inputs) n->add_input(i);
    for (const auto& o : outputs) n->add_output(o);
    return n;
  }
  std::string Bytes() const { return model_.SerializeAsString(); }
  onnx::ModelProto& proto() { return model_; }

  static void AttrInt(onnx::NodeProto* n, const std::string& name, int64_t v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  static void AttrInts(onnx::NodeProto* n, const std::string& name, std::vector<int64_t> v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
  }
  static void AttrString(onnx::NodeProto* n, const std::string& name, const std::string& v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(v);
  }
  static void AttrTensor(onnx::NodeProto* n, const std::string& name, const Tensor& t) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::TENSOR);
    OnnxTensorToProto(t, "", a->mutable_t());
  }
  // A graph attribute (If's branches, Loop's body): another OnnxModel's graph.
  static void AttrGraph(onnx::NodeProto* n, const std::string& name, const OnnxModel& body) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::GRAPH);
    *a->mutable_g() = body.model_.graph();
  }

 private:
  onnx::GraphProto* graph() { return model_.mutable_graph(); }
  static void ValueInfo(onnx::ValueInfoProto* vi, const std::string& name, int elem,
                        const std::vector<int64_t>& dims) {
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(elem);
    auto* shape = tt->mutable_shape();
    for (int64_t d : dims) {
      auto* dim = shape->add_dim();
      if (d >= 0)
        dim->set_dim_value(d);
      else
        dim->set_dim_param("N");
    }
  }
  onnx::ModelProto model_;
};

// The graph `m` imports to (as "test.onnx", external data refused).
inline Graph Import(const OnnxModel& m, const OnnxImportOptions& options = {}) {
  Result<Graph> g = ImportOnnxFromBytes(m.Bytes(), "", "test.onnx", options);
  INFO((g.ok() ? std::string() : g.error().ToString()));
  REQUIRE(g.ok());
  return std::move(*g);
}

}  // namespace kiln::testing
