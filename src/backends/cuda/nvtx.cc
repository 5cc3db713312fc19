// NVTX ranges for the profiler's external ranges (profiler/external_ranges.h): operators and
// user Task/Frame/Event show up by name in Nsight Systems while profiling. Header-only NVTX3
// from the CUDA toolkit.
#include "backends/cuda/nvtx.h"

#include <nvtx3/nvToolsExt.h>

#include "profiler/external_ranges.h"

namespace nanomx::cuda {
namespace {
// NVTX3 initialises itself on its first call and then reads its function table without
// synchronisation: a thread's first range can read the table while another thread's first call
// writes it (ThreadSanitizer reports it on the host-emulated device). Initialising once under a
// function-local static's guard orders every later read after the writes. Ranges are made only
// while profiling, so the guard's load costs nothing otherwise.
void initialize_once() {
  static const bool initialized = (nvtxInitialize(nullptr), true);
  (void)initialized;
}

// Without Nsight attached, NVTX3's calls return at once (no tool injected).
void push(const char* name) {
  initialize_once();
  nvtxRangePushA(name);
}
void pop() {
  initialize_once();
  nvtxRangePop();
}
}  // namespace

void register_nvtx_ranges() { profiler::set_external_ranges({push, pop}); }

}  // namespace nanomx::cuda
