#include "profiler/nvtx.h"

#ifdef NANOMX_HAVE_CUDA
#include <nvtx3/nvToolsExt.h>
#endif

namespace nanomx::profiler::nvtx {

#ifdef NANOMX_HAVE_CUDA
// Without Nsight attached, NVTX3's calls return at once (no tool injected).
void push(const char* name) { nvtxRangePushA(name); }
void pop() { nvtxRangePop(); }
#else
void push(const char*) {}
void pop() {}
#endif

}  // namespace nanomx::profiler::nvtx
