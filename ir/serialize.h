// Graph (de)serialization: binary `.kgraph` (a kiln.proto GraphDef ending with a CRC32C trailer)
// and protobuf text format `.kgraph.txt`.
//
// Loading refuses a newer format version, truncated, garbage or corrupt files and files over
// kMaxGraphFileBytes, each with a clear error, and verifies the graph (see verifier.h). Printing a
// graph and parsing the text back gives an identical graph; so does the binary form.
#pragma once

#include <string>

#include "ir/graph.h"
#include "ir/status.h"
#include "proto/kiln.pb.h"

namespace kiln {

inline constexpr int64_t kMaxGraphFileBytes = int64_t{1} << 30;

proto::GraphDef GraphToProto(const Graph& graph);
// Structural conversion only (no verification).
Result<Graph> GraphFromProto(const proto::GraphDef& def);

// The pieces, shared with other kiln.proto documents (compiled executables).
proto::NodeDef NodeToProto(const Node& node);
Result<Node> NodeFromProto(const proto::NodeDef& def);
proto::ShapeProto ShapeToProto(const Shape& s);
Result<Shape> ShapeFromProto(const proto::ShapeProto& p);
proto::AttrValue AttrToProto(const AttrValue& v);
Result<AttrValue> AttrFromProto(const proto::AttrValue& p);
proto::TensorProto TensorToProto(const Tensor& t);
Result<Tensor> TensorFromProto(const proto::TensorProto& p);
proto::DataType DTypeToProto(DType t);
Result<DType> DTypeFromProto(int t);

std::string GraphToText(const Graph& graph);
// Refused (nothing serialized) when the file would be over kMaxGraphFileBytes, which LoadGraph
// reads: a frozen graph whose constants are that large.
Result<std::string> GraphToBinary(const Graph& graph);
// Parse and verify. `origin` names the source in errors (a file name).
Result<Graph> GraphFromText(const std::string& text, const std::string& origin = "<text>");
Result<Graph> GraphFromBinary(const std::string& bytes, const std::string& origin = "<bytes>");

// By extension: ".kgraph.txt" or ".txt" is text, anything else binary. Saving is atomic.
Result<Graph> LoadGraph(const std::string& path);
Status SaveGraph(const Graph& graph, const std::string& path);

}  // namespace kiln
