// A Conv2D with both backward ops on placeholders x and w of one dtype: outputs "y" = Conv2D(x,
// w), "dx" and "dw" for the upstream gradient dy = y * y (any gradient would do). Shared by the
// f32 and bf16 convolution tests of the cpu backend.
#pragma once

#include <catch2/catch.hpp>

#include "ir/builder.h"
#include "ir/ops/linalg.h"
#include "ir/ops/math.h"

namespace kiln::testing {

inline Graph ConvForwardAndBackward(DType dtype, const Shape& xs, const Shape& ws,
                                    const Conv2DOptions& options) {
  GraphBuilder g;
  Value x = g.Placeholder("x", dtype, xs);
  Value w = g.Placeholder("w", dtype, ws);
  Value y = Conv2D(x, w, options);
  Value dy = Mul(y, y);
  g.Output("y", y);
  g.Output("dx", Conv2DBackpropInput(dy, w, x, options));
  g.Output("dw", Conv2DBackpropFilter(x, dy, w, options));
  Result<Graph> graph = g.Build();
  INFO((graph.ok() ? "" : graph.error().ToString()));
  REQUIRE(graph.ok());
  return std::move(*graph);
}

}  // namespace kiln::testing
