// One LSTM cell step, shared by the models that unroll it (shi2016.cc) and loop it
// (sequence_lstm.cc). `x` is [N, in], `h`/`c` the previous state (invalid at step 0: zero state,
// whose terms are left out). Gate pre-activations x Wx + h Wh + b are [N, 4H], split in the order
// input, forget, cell, output. Returns {h, c}.
#pragma once

#include <utility>

#include "ir/builder.h"

namespace kiln::models {

std::pair<Value, Value> LstmStep(Value x, Value h, Value c, Value wx, Value wh, Value b);

}  // namespace kiln::models
