#include "profiler/nvtx.h"

#ifdef NANOMX_HAVE_CUDA
#include <nvtx3/nvToolsExt.h>
#endif

namespace nanomx::profiler::nvtx {

#ifdef NANOMX_HAVE_CUDA
namespace {
// NVTX3 initialises itself on its first call and then reads its function table without
// synchronisation: a thread's first range can read the table while another thread's first call
// writes it (ThreadSanitizer reports it; found by the TSan build on the host-emulated device).
// Initialising once under a function-local static's guard orders every later read after the
// writes. Ranges are made only while profiling, so the guard's load costs nothing otherwise.
void initialize_once() {
  static const bool initialized = (nvtxInitialize(nullptr), true);
  (void)initialized;
}
}  // namespace

// Without Nsight attached, NVTX3's calls return at once (no tool injected).
void push(const char* name) {
  initialize_once();
  nvtxRangePushA(name);
}
void pop() {
  initialize_once();
  nvtxRangePop();
}
#else
void push(const char*) {}
void pop() {}
#endif

}  // namespace nanomx::profiler::nvtx
