// The parsed attributes of the optimizer update operators (ops/optimizer.cc), read by their
// kernels on every device. docs/symbolic.md gives each operator's formula.
#pragma once

#include <vector>

namespace nanomx::ops {

// One struct for the SGD and Adam families: each operator accepts only its own keys, the rest
// keep MXNet's defaults. clip_gradient < 0 means no clipping (MXNet's kernel default, -1).
struct OptimizerParams {
  double lr = 0;
  double wd = 0;
  double rescale_grad = 1;
  double clip_gradient = -1;
  double momentum = 0;
  double beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8;
  bool lazy_update = true;  // accepted for MXNet's signature; dense arrays ignore it
};

// multi_sgd_update / multi_sgd_mom_update: one learning rate and weight decay per weight.
struct MultiSgdParams {
  std::vector<double> lrs, wds;
  double momentum = 0;
  double rescale_grad = 1;
  double clip_gradient = -1;
  int num_weights = 1;
};

}  // namespace nanomx::ops
