#include "models/lstm_cell.h"

#include <vector>

#include "ir/ops/array.h"
#include "ir/ops/linalg.h"
#include "ir/ops/math.h"
#include "ir/ops/nn.h"

namespace kiln::models {

std::pair<Value, Value> LstmStep(Value x, Value h, Value c, Value wx, Value wh, Value b) {
  Value pre = BiasAdd(MatMul(x, wx), b, -1);
  if (h.valid()) pre = pre + MatMul(h, wh);
  std::vector<Value> gates = SplitEven(pre, 1, 4);
  Value new_c = Sigmoid(gates[0]) * Tanh(gates[2]);
  if (c.valid()) new_c = Sigmoid(gates[1]) * c + new_c;
  Value new_h = Sigmoid(gates[3]) * Tanh(new_c);
  return {new_h, new_c};
}

}  // namespace kiln::models
