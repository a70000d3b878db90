// Node attributes: a closed set of value kinds (the same as proto/kiln.proto's AttrValue) and a
// name -> value map with typed getters that report missing or ill-typed attributes clearly.
// A graph-valued attribute (the branches and bodies of control-flow ops, ir/ops/control.h) holds
// a verified Graph, shared and immutable; two such attributes are equal when they hold the same
// Graph object.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "ir/dtype.h"
#include "ir/shape.h"
#include "ir/status.h"
#include "ir/tensor.h"

namespace kiln {

class Graph;

enum class AttrType {
  kInt,
  kFloat,
  kString,
  kBool,
  kInts,
  kFloats,
  kStrings,
  kShape,
  kDType,
  kTensor,
  kGraph
};
const char* AttrTypeName(AttrType t);

class AttrValue {
 public:
  using Storage =
      std::variant<int64_t, double, std::string, bool, std::vector<int64_t>, std::vector<double>,
                   std::vector<std::string>, Shape, DType, Tensor, std::shared_ptr<const Graph>>;
  AttrValue() : v_(int64_t{0}) {}
  AttrValue(int v) : v_(int64_t{v}) {}                             // NOLINT: implicit by design
  AttrValue(int64_t v) : v_(v) {}                                  // NOLINT
  AttrValue(double v) : v_(v) {}                                   // NOLINT
  AttrValue(float v) : v_(double{v}) {}                            // NOLINT
  AttrValue(const char* v) : v_(std::string(v)) {}                 // NOLINT
  AttrValue(std::string v) : v_(std::move(v)) {}                   // NOLINT
  AttrValue(bool v) : v_(v) {}                                     // NOLINT
  AttrValue(std::vector<int64_t> v) : v_(std::move(v)) {}          // NOLINT
  AttrValue(std::vector<double> v) : v_(std::move(v)) {}           // NOLINT
  AttrValue(std::vector<std::string> v) : v_(std::move(v)) {}      // NOLINT
  AttrValue(Shape v) : v_(std::move(v)) {}                         // NOLINT
  AttrValue(DType v) : v_(v) {}                                    // NOLINT
  AttrValue(Tensor v) : v_(std::move(v)) {}                        // NOLINT
  AttrValue(std::shared_ptr<const Graph> v) : v_(std::move(v)) {}  // NOLINT

  AttrType type() const { return static_cast<AttrType>(v_.index()); }
  template <typename T>
  const T& get() const {
    return std::get<T>(v_);
  }
  // Human-readable form used in dumps and error messages.
  std::string ToString() const;
  bool operator==(const AttrValue& o) const;

 private:
  Storage v_;
};

class AttrMap {
 public:
  bool Has(const std::string& name) const { return values_.count(name) > 0; }
  void Set(const std::string& name, AttrValue v) { values_[name] = std::move(v); }
  void Erase(const std::string& name) { values_.erase(name); }
  const AttrValue* Find(const std::string& name) const;
  const std::map<std::string, AttrValue>& items() const { return values_; }

  // Typed getters; an error names the attribute and the kind expected.
  Result<int64_t> GetInt(const std::string& name) const;
  Result<double> GetFloat(const std::string& name) const;
  Result<std::string> GetString(const std::string& name) const;
  Result<bool> GetBool(const std::string& name) const;
  Result<std::vector<int64_t>> GetInts(const std::string& name) const;
  Result<std::vector<double>> GetFloats(const std::string& name) const;
  Result<std::vector<std::string>> GetStrings(const std::string& name) const;
  Result<Shape> GetShape(const std::string& name) const;
  Result<DType> GetDType(const std::string& name) const;
  Result<Tensor> GetTensor(const std::string& name) const;
  Result<std::shared_ptr<const Graph>> GetGraph(const std::string& name) const;

  bool operator==(const AttrMap& o) const { return values_ == o.values_; }

 private:
  template <typename T>
  Result<T> Get(const std::string& name, AttrType type) const;
  std::map<std::string, AttrValue> values_;
};

}  // namespace kiln
