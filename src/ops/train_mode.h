// The calling thread's train mode: whether an eager call of an operator that reads it (Dropout,
// BatchNorm: Op::reads_train_mode) runs as in training. autograd's record(train_mode=...),
// train_mode() and predict_mode() set it (autograd/autograd.h); it lives here, below autograd,
// because the operator call path reads it.
#pragma once

namespace nanomx::ops {

bool training_mode();
// Sets it and returns the previous value.
bool set_training_mode(bool on);

}  // namespace nanomx::ops
