#include "ir/attr.h"

#include <sstream>

#include "ir/graph.h"

namespace kiln {

const char* AttrTypeName(AttrType t) {
  switch (t) {
    case AttrType::kInt:
      return "int";
    case AttrType::kFloat:
      return "float";
    case AttrType::kString:
      return "string";
    case AttrType::kBool:
      return "bool";
    case AttrType::kInts:
      return "list(int)";
    case AttrType::kFloats:
      return "list(float)";
    case AttrType::kStrings:
      return "list(string)";
    case AttrType::kShape:
      return "shape";
    case AttrType::kDType:
      return "dtype";
    case AttrType::kTensor:
      return "tensor";
    case AttrType::kGraph:
      return "graph";
  }
  return "?";
}

namespace {
template <typename T>
std::string JoinList(const std::vector<T>& v) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  os << "]";
  return os.str();
}
}  // namespace

std::string AttrValue::ToString() const {
  std::ostringstream os;
  switch (type()) {
    case AttrType::kInt:
      os << get<int64_t>();
      break;
    case AttrType::kFloat:
      os << get<double>();
      break;
    case AttrType::kString:
      os << '"' << get<std::string>() << '"';
      break;
    case AttrType::kBool:
      os << (get<bool>() ? "true" : "false");
      break;
    case AttrType::kInts:
      os << JoinList(get<std::vector<int64_t>>());
      break;
    case AttrType::kFloats:
      os << JoinList(get<std::vector<double>>());
      break;
    case AttrType::kStrings:
      os << JoinList(get<std::vector<std::string>>());
      break;
    case AttrType::kShape:
      os << get<Shape>().ToString();
      break;
    case AttrType::kDType:
      os << DTypeName(get<DType>());
      break;
    case AttrType::kTensor:
      os << get<Tensor>().Summary(4);
      break;
    case AttrType::kGraph: {
      const std::shared_ptr<const Graph>& g = get<std::shared_ptr<const Graph>>();
      os << "graph(" << (g ? g->nodes().size() : 0) << " nodes)";
      break;
    }
  }
  return os.str();
}

bool AttrValue::operator==(const AttrValue& o) const {
  if (type() != o.type()) return false;
  return std::visit(
      [&o](const auto& mine) {
        using T = std::decay_t<decltype(mine)>;
        if constexpr (std::is_same_v<T, Tensor>)
          return mine.BitwiseEquals(o.get<Tensor>());
        else
          return mine == o.get<T>();
      },
      v_);
}

const AttrValue* AttrMap::Find(const std::string& name) const {
  auto it = values_.find(name);
  return it == values_.end() ? nullptr : &it->second;
}

template <typename T>
Result<T> AttrMap::Get(const std::string& name, AttrType type) const {
  const AttrValue* v = Find(name);
  if (!v) return MakeError(ErrorCode::kInvalidArgument, "missing attribute '", name, "'");
  if (v->type() != type)
    return MakeError(ErrorCode::kInvalidArgument, "attribute '", name, "' is ",
                     AttrTypeName(v->type()), ", expected ", AttrTypeName(type));
  return v->get<T>();
}

Result<int64_t> AttrMap::GetInt(const std::string& n) const {
  return Get<int64_t>(n, AttrType::kInt);
}
Result<double> AttrMap::GetFloat(const std::string& n) const {
  return Get<double>(n, AttrType::kFloat);
}
Result<std::string> AttrMap::GetString(const std::string& n) const {
  return Get<std::string>(n, AttrType::kString);
}
Result<bool> AttrMap::GetBool(const std::string& n) const { return Get<bool>(n, AttrType::kBool); }
Result<std::vector<int64_t>> AttrMap::GetInts(const std::string& n) const {
  return Get<std::vector<int64_t>>(n, AttrType::kInts);
}
Result<std::vector<double>> AttrMap::GetFloats(const std::string& n) const {
  return Get<std::vector<double>>(n, AttrType::kFloats);
}
Result<std::vector<std::string>> AttrMap::GetStrings(const std::string& n) const {
  return Get<std::vector<std::string>>(n, AttrType::kStrings);
}
Result<Shape> AttrMap::GetShape(const std::string& n) const {
  return Get<Shape>(n, AttrType::kShape);
}
Result<DType> AttrMap::GetDType(const std::string& n) const {
  return Get<DType>(n, AttrType::kDType);
}
Result<Tensor> AttrMap::GetTensor(const std::string& n) const {
  return Get<Tensor>(n, AttrType::kTensor);
}
Result<std::shared_ptr<const Graph>> AttrMap::GetGraph(const std::string& n) const {
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const Graph> g,
                        Get<std::shared_ptr<const Graph>>(n, AttrType::kGraph));
  if (!g) return MakeError(ErrorCode::kInvalidArgument, "attribute '", n, "' holds no graph");
  return g;
}

}  // namespace kiln
