// Inference fusion: in a graph bound without gradients, each Convolution followed by a BatchNorm,
// a residual add (elemwise_add) and/or a ReLU becomes one _sg_mkldnn_conv node
// (ops/fused_convolution.h), as MXNet 1.x's MKL-DNN subgraph backend does behind
// MXNET_SUBGRAPH_BACKEND=MKLDNN; nanomx does it by default (NANOMX_FUSE=0 turns it off).
// docs/nn.md#inference-fusion.
#pragma once

#include <optional>

#include "symbol/symbol.h"

namespace nanomx::symbol {

// Whether NANOMX_FUSE allows fusion (unset or anything but "0").
bool fusion_enabled_by_env();

// `sym` with its fusable chains folded, or nullopt when it has none. Operator nodes are copies
// (the caller's symbol is left as it is); variable nodes are shared, so arrays bound to `sym`'s
// variables bind the result's. A chain is fused only where each intermediate value has one
// reader and is not an output.
std::optional<Symbol> fuse_for_inference(const Symbol& sym);

}  // namespace nanomx::symbol
