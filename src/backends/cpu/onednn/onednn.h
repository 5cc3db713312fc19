// oneDNN (MXNet 1.x's MKL-DNN) inside the CPU backend: one engine, a stream per thread, plain
// memory descriptors over NDArray data, a process-wide cache of primitives keyed by what defines
// them (a second call with the same shapes, dtype and attributes creates nothing), scratchpads
// taken from nanomx's storage (so the memory profile sees them) and the intra-op thread count.
// Kernels stay plain-layout at their boundary: every tensor in and out is row-major.
#pragma once

#include <functional>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "nanomx/dtype.h"
#include "nanomx/ndarray.h"
#include "nanomx/shape.h"

namespace nanomx::ops::cpu::onednn {

using dims = dnnl::memory::dims;
using tag = dnnl::memory::format_tag;

dnnl::engine& engine();

// Whether oneDNN is on: NANOMX_MKLDNN_ENABLED / MXNET_MKLDNN_ENABLED (MXNet's switch), default 1.
bool enabled();
// Whether oneDNN computes `dtype` here: float32 while enabled() (float64, float16 and the
// integers take nanomx's own kernels).
bool supports(DType dtype);
dnnl::memory::data_type data_type(DType dtype);  // throws for a dtype oneDNN lacks

dims to_dims(const Shape& shape);
// The row-major descriptor of `d` (a, ab, abc, ... as many axes as d has; at most 6).
dnnl::memory::desc plain_desc(const dims& d, DType dtype);
inline dnnl::memory::desc plain_desc(const Shape& shape, DType dtype) {
  return plain_desc(to_dims(shape), dtype);
}
// A oneDNN view of `a`'s data (no copy) as `desc`.
dnnl::memory wrap(const dnnl::memory::desc& desc, const NDArray& a);
dnnl::memory wrap(const dnnl::memory::desc& desc, void* data);

// A primitive and its descriptor (for queries: workspace_desc, scratchpad_desc, ...).
struct Primitive {
  dnnl::primitive primitive;
  dnnl::primitive_desc_base pd;
};

// Returns the primitive cached under `key`, calling `make` the first time. Creation is recorded
// as the profiler event "oneDNN create <kind>" on the calling thread, so the warm-up of a first
// call shows in the trace. Every key is prefixed by the caller's operator so kinds never clash;
// thread-safe (creation happens outside the lock; a racing duplicate is dropped).
const Primitive& cached(const std::string& key, std::string_view kind,
                        const std::function<Primitive()>& make);

// A primitive attribute with the scratchpad left to the caller (nanomx's storage).
dnnl::primitive_attr user_scratchpad();

// Runs `p` on the calling thread's stream and waits. A scratchpad the primitive asks for is
// allocated from nanomx's storage for the call (DNNL_ARG_SCRATCHPAD is added). Sets the
// intra-op thread count first.
void execute(const Primitive& p, std::unordered_map<int, dnnl::memory> args);

// The intra-op thread count shared by oneDNN, OpenBLAS and nanomx's own parallel loops:
// NANOMX_OMP_MAX_THREADS / MXNET_OMP_MAX_THREADS / OMP_NUM_THREADS when set, otherwise the cores
// divided among the CPU engine workers (so workers times intra-op threads never exceeds the
// cores). docs/nn.md#threads.
int intra_op_threads();
// Applies intra_op_threads() to the calling thread's OpenMP team (OpenMP keeps the setting per
// thread) once per thread.
void set_thread_team();

// "k=v" pieces joined: the cache key of a primitive.
std::string key_of(std::string_view op, const std::vector<dims>& shapes,
                   std::initializer_list<int64_t> extra, DType dtype);

}  // namespace nanomx::ops::cpu::onednn
