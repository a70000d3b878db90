// i16, u16, u32 and u64 tensors through whole graphs on every backend (the compiled backends run
// their nodes as reference steps): arithmetic, comparisons, reductions, shifts, casts, copies and
// serialization keep every bit of 64-bit values.
#include <catch2/catch.hpp>

#include "ir/ops/array.h"
#include "ir/ops/math.h"
#include "ir/ops/reduce.h"
#include "ir/serialize.h"
#include "runtime/session.h"
#include "tests/testing/backends.h"

using namespace kiln;
using Ints = std::vector<int64_t>;

TEST_CASE("Wide integer dtypes run whole graphs on every backend", "[runtime]") {
  const int64_t big = (int64_t{1} << 40) + 3;  // beyond float precision
  for (DType t : {i16, u16, u32, u64}) {
    const bool wide = DTypeSize(t) == 8;
    Tensor a = Tensor::FromDoubles(t, {4}, {1, 200, 7, 9});
    if (wide) a.SetInt(3, big);
    Tensor b = Tensor::FromDoubles(t, {4}, {3, 100, 7, 2});
    GraphBuilder g;
    Value x = g.Placeholder("a", t, {4}), y = g.Placeholder("b", t, {4});
    g.Output("sum", x + y);
    g.Output("max", Maximum(x, y));
    g.Output("less", Less(x, y));
    g.Output("total", Sum(Reshape(x, {2, 2}), {1}));
    g.Output("floats", Cast(x, f64));
    g.Output("reversed", Slice(x, {3}, {-5}, {0}, {-1}));
    if (IsUnsigned(t)) g.Output("shifted", ShiftRight(ShiftLeft(x, y), y));
    Result<Graph> graph = g.Build();
    INFO(DTypeName(t) << ": " << (graph.ok() ? std::string() : graph.error().ToString()));
    REQUIRE(graph.ok());
    // Through the text form and back: the dtype survives serialization.
    Result<Graph> loaded = GraphFromText(GraphToText(*graph));
    REQUIRE(loaded.ok());
    for (const std::string& backend : testing::AvailableBackends()) {
      Session session(*loaded, {.backend = backend});
      std::vector<TensorName> fetches = {"sum", "max", "less", "total", "floats", "reversed"};
      if (IsUnsigned(t)) fetches.push_back("shifted");
      auto out = session.Run({{"a", a}, {"b", b}}, fetches);
      INFO(backend << ": " << (out.ok() ? std::string() : out.error().ToString()));
      REQUIRE(out.ok());
      const int64_t last = wide ? big : 9;
      CHECK(out->at(0).dtype() == t);
      CHECK(out->at(0).ToInts() == Ints{4, 300, 14, last + 2});
      CHECK(out->at(1).ToInts() == Ints{3, 200, 7, last});
      CHECK(out->at(2).ToInts() == Ints{1, 0, 0, 0});
      CHECK(out->at(3).ToInts() == Ints{201, 7 + last});
      CHECK(out->at(4).ToDoubles() == std::vector<double>{1, 200, 7, static_cast<double>(last)});
      CHECK(out->at(5).ToInts() == Ints{last, 7, 200, 1});
      if (IsUnsigned(t))  // a shift past 63 bits leaves 0
        CHECK(out->at(6).ToInts() == Ints{1, 0, 7, last});
    }
  }
}
