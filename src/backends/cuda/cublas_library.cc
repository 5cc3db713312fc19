
#include "backends/cuda/cublas_library.h"

#include <dlfcn.h>

#include <cstdlib>
#include <string>

#include "base/plugin.h"
#include "nanomx/error.h"

namespace nanomx::ops::cuda {
namespace {

// NANOMX_CUBLAS_PATH (the toolkit's library found by CMake) and NANOMX_CUBLAS_SONAME
// (libcublas.so.<major>) come from src/ops/CMakeLists.txt.
void* open_library(std::string& tried) {
  const char* forced = std::getenv("NANOMX_CUBLAS_LIBRARY");
  const char* candidates[] = {forced, forced ? nullptr : NANOMX_CUBLAS_PATH,
                              forced ? nullptr : NANOMX_CUBLAS_SONAME};
  for (const char* name : candidates) {
    if (name == nullptr) continue;
    // RTLD_LOCAL: nothing else in the process should bind to cuBLAS' symbols through us.
    if (void* handle = dlopen(name, RTLD_NOW | RTLD_LOCAL)) return handle;
    tried += std::string(tried.empty() ? "" : "; ") + dlerror();
  }
  return nullptr;
}

template <typename Fn>
void resolve(void* handle, const char* symbol, Fn& fn) {
  fn = reinterpret_cast<Fn>(plugin::entry_point(handle, symbol, "cuBLAS"));
}

CublasLibrary load() {
  std::string tried;
  void* handle = open_library(tried);
  NANOMX_CHECK(handle != nullptr) << "cuBLAS: cannot load the library (" << tried
                                  << "); set NANOMX_CUBLAS_LIBRARY to its path";
  CublasLibrary lib{};
  resolve(handle, "cublasCreate_v2", lib.create);
  resolve(handle, "cublasSetMathMode", lib.set_math_mode);
  resolve(handle, "cublasSetStream_v2", lib.set_stream);
  resolve(handle, "cublasSgemm_v2", lib.sgemm);
  resolve(handle, "cublasSgemmStridedBatched", lib.sgemm_strided_batched);
  resolve(handle, "cublasDgemm_v2", lib.dgemm);
  resolve(handle, "cublasDgemmStridedBatched", lib.dgemm_strided_batched);
  resolve(handle, "cublasGemmStridedBatchedEx", lib.gemm_strided_batched_ex);
  return lib;  // the handle stays open for the life of the process
}

}  // namespace

const CublasLibrary& cublas() {
  static const CublasLibrary library = load();
  return library;
}

}  // namespace nanomx::ops::cuda
