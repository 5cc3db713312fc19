// The calling thread's train mode (ops/train_mode.h).
#include "ops/train_mode.h"

#include <utility>

namespace nanomx::ops {
namespace {
thread_local bool training = false;
}  // namespace

bool training_mode() { return training; }
bool set_training_mode(bool on) { return std::exchange(training, on); }

}  // namespace nanomx::ops
