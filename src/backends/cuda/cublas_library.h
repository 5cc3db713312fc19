// cuBLAS, loaded on first use. libcublas (and the libcublasLt it needs) takes ~0.35 s and
// ~215 MB of resident memory to load and relocate, so linking it made every process that links
// nanomx pay that at start, GPU or not: `import nanomx` took ~1 s, most of it cuBLAS. Only the
// few entry points the matrix products call are resolved, from the library found at build time
// (or NANOMX_CUBLAS_LIBRARY), the first time a GPU matrix product runs.
#pragma once

#include <cublas_v2.h>

namespace nanomx::ops::cuda {

struct CublasLibrary {
  decltype(&cublasCreate_v2) create;
  decltype(&cublasSetMathMode) set_math_mode;
  decltype(&cublasSetStream_v2) set_stream;
  decltype(&cublasSgemm_v2) sgemm;
  decltype(&cublasSgemmStridedBatched) sgemm_strided_batched;
  decltype(&cublasDgemm_v2) dgemm;
  decltype(&cublasDgemmStridedBatched) dgemm_strided_batched;
  // float16. Named by its type: C++ sees an inline overload (computeType as a cudaDataType) too.
  cublasStatus_t (*gemm_strided_batched_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t,
                                            int, int, int, const void*, const void*, cudaDataType,
                                            int, long long, const void*, cudaDataType, int,
                                            long long, const void*, void*, cudaDataType, int,
                                            long long, int, cublasComputeType_t, cublasGemmAlgo_t);
};

// Loads the library on the first call (thread-safe); throws naming the file and dlerror() when
// it cannot be loaded or lacks an entry point. Later calls return the same table.
const CublasLibrary& cublas();

}  // namespace nanomx::ops::cuda
