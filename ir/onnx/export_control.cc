// ONNX exporters of If, While and Deferred nodes.
// - If(cond, x...) -> ONNX If whose branches read x... from the outer scope.
// - While(v...) -> ONNX Loop: the condition is tested once before the loop (in the outer graph)
//   and again at the end of every iteration on the new values (inside the body), which is when
//   ONNX's Loop reads it; max_iterations becomes the trip count M. Scan outputs are the Loop's
//   scan outputs, padded with zero rows to scan_rows where the While has that many.
// - A Deferred node from the ONNX importer is the ONNX node it holds, with its inputs and outputs
//   renamed.
#include <google/protobuf/text_format.h>

#include "ir/onnx/export_context.h"

namespace kiln::onnx_export {
namespace {

onnx::GraphProto* GraphAttr(onnx::NodeProto& node, const std::string& name) {
  onnx::AttributeProto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::GRAPH);
  return a->mutable_g();
}

Status ExportIf(NodeExport& e) {
  std::vector<std::string> args;
  for (int i = 1; i < e.num_inputs(); ++i) args.push_back(e.in(i));
  std::vector<std::string> outputs;
  for (int i = 0; i < e.num_outputs(); ++i) outputs.push_back(e.out(i));
  onnx::NodeProto& node = e.Add("If", {e.in(0)}, outputs);
  for (const char* branch : {"then_branch", "else_branch"}) {
    KILN_ASSIGN_OR_RETURN(std::shared_ptr<const Graph> body, e.attrs().GetGraph(branch));
    onnx::GraphProto* g = GraphAttr(node, branch);
    g->set_name(e.Temp(branch));
    KILN_ASSIGN_OR_RETURN(std::vector<std::string> results, e.Write(*body, args, g));
    for (size_t i = 0; i < results.size(); ++i)
      e.Output(g, results[i], e.out_type(static_cast<int>(i)), body->outputs()[i].name);
  }
  return OkStatus();
}

// A one-element bool as the scalar ONNX's Loop reads.
std::string ScalarCondition(NodeExport& e, const std::string& cond, onnx::GraphProto* into) {
  std::string scalar = e.Temp("cond");
  e.Add("Reshape", {cond, e.Ints({}, "scalar_shape")}, {scalar}, into);
  return scalar;
}

Status ExportWhile(NodeExport& e) {
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const Graph> cond, e.attrs().GetGraph("cond"));
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const Graph> body, e.attrs().GetGraph("body"));
  KILN_ASSIGN_OR_RETURN(int64_t max_iterations, e.attrs().GetInt("max_iterations"));
  std::vector<std::string> vars;
  for (int i = 0; i < e.num_inputs(); ++i) vars.push_back(e.in(i));
  KILN_ASSIGN_OR_RETURN(std::vector<std::string> first, e.Write(*cond, vars));
  std::vector<std::string> inputs{
      max_iterations >= 0 ? e.Scalar(static_cast<double>(max_iterations), DType::kI64, "M") : "",
      ScalarCondition(e, first.at(0), nullptr)};
  inputs.insert(inputs.end(), vars.begin(), vars.end());
  // Scan outputs of scan_rows rows leave the Loop with a row per iteration and are padded.
  KILN_ASSIGN_OR_RETURN(int64_t scan_rows, e.attrs().GetInt("scan_rows"));
  const int n = e.num_inputs();
  std::vector<std::string> outputs;
  for (int i = 0; i < e.num_outputs(); ++i)
    outputs.push_back(i >= n && scan_rows >= 0 ? e.Temp("scan" + std::to_string(i - n)) : e.out(i));
  onnx::NodeProto& node = e.Add("Loop", inputs, outputs);

  onnx::GraphProto* g = GraphAttr(node, "body");
  g->set_name(e.Temp("body"));
  SetValueInfo(e.Temp("iteration"), {DType::kI64, Shape()}, g->add_input());
  SetValueInfo(e.Temp("cond_in"), {DType::kBool, Shape()}, g->add_input());
  std::vector<std::string> args;
  for (int i = 0; i < n; ++i) {
    args.push_back(e.Temp("v" + std::to_string(i)));
    SetValueInfo(args.back(), e.out_type(i), g->add_input());
  }
  KILN_ASSIGN_OR_RETURN(std::vector<std::string> next, e.Write(*body, args, g));
  if (next.size() != static_cast<size_t>(e.num_outputs()))
    return e.node().MakeNodeError(ErrorCode::kInvalidArgument, "its body gives ", next.size(),
                                  " results for ", e.num_outputs(), " outputs");
  KILN_ASSIGN_OR_RETURN(
      std::vector<std::string> again,
      e.Write(*cond, std::vector<std::string>(next.begin(), next.begin() + n), g));
  e.Output(g, ScalarCondition(e, again.at(0), g), {DType::kBool, Shape()}, "cond_out");
  for (int i = 0; i < e.num_outputs(); ++i) {
    TensorType type = e.out_type(i);
    if (i >= n)
      type.shape = Shape(std::vector<int64_t>(type.shape.dims().begin() + 1,
                                              type.shape.dims().end()));  // a row
    e.Output(g, next[i], type, (i < n ? "v" : "scan") + std::to_string(i) + "_out");
  }
  for (int i = n; i < e.num_outputs() && scan_rows >= 0; ++i) {
    // pads: zeros before every axis, scan_rows - rows after axis 0, zeros after the others.
    const int rank = e.out_type(i).shape.rank();
    const std::string rows = e.Temp("rows"), missing = e.Temp("missing_rows"),
                      pads = e.Temp("pads");
    SetAttr(e.Add("Shape", {outputs[i]}, {rows}), "end", int64_t{1});
    e.Add("Sub", {e.Ints({scan_rows}, "scan_rows"), rows}, {missing});
    SetAttr(e.Add("Concat",
                  {e.Ints(std::vector<int64_t>(rank, 0), "zeros"), missing,
                   e.Ints(std::vector<int64_t>(rank - 1, 0), "zeros")},
                  {pads}),
            "axis", int64_t{0});
    e.Add("Pad", {outputs[i], pads}, {e.out(i)});
  }
  return OkStatus();
}

Status ExportDeferred(NodeExport& e) {
  const AttrValue* expander = e.attrs().Find("expander");
  if (!expander || expander->type() != AttrType::kString || expander->get<std::string>() != "onnx")
    return e.Unsupported("not an ONNX node");
  KILN_ASSIGN_OR_RETURN(std::string text, e.attrs().GetString("source_node"));
  onnx::NodeProto source;
  if (!google::protobuf::TextFormat::ParseFromString(text, &source))
    return e.node().MakeNodeError(ErrorCode::kInvalidArgument,
                                  "its source_node is not an ONNX NodeProto in text form");
  // The node's inputs are the NodeProto's distinct present inputs, in order (as the importer
  // made them); its outputs are the NodeProto's present outputs.
  std::map<std::string, std::string> renamed;
  std::vector<std::string> inputs;
  int k = 0;
  for (const std::string& in : source.input()) {
    if (!in.empty() && !renamed.count(in)) {
      if (k >= e.num_inputs())
        return e.node().MakeNodeError(ErrorCode::kInvalidArgument, "has ", e.num_inputs(),
                                      " inputs; its ONNX node names more");
      renamed[in] = e.in(k++);
    }
    inputs.push_back(in.empty() ? "" : renamed[in]);
  }
  std::vector<std::string> outputs;
  int port = 0;
  for (const std::string& out : source.output()) {
    if (out.empty() || port >= e.num_outputs()) {
      outputs.push_back("");
    } else {
      outputs.push_back(e.out(port++));
    }
  }
  onnx::NodeProto& node = e.Add(source.op_type(), inputs, outputs);
  *node.mutable_attribute() = source.attribute();
  return OkStatus();
}

}  // namespace

void AddControlExporters(std::map<std::string, OpExporter>& table) {
  table["If"] = ExportIf;
  table["While"] = ExportWhile;
  table["Deferred"] = ExportDeferred;
}

}  // namespace kiln::onnx_export
