# The host-emulated GPU (hostgpu.h; docs/cuda.md): included by the top CMakeLists.txt, before
# src/, when NANOMX_CUDA is EMULATED; the layers then link nanomx_hostgpu instead of CUDA's
# runtime and dlopen nanomx_hostgpu_cublas instead of cuBLAS. Needs CUDA's headers only: no nvcc,
# no GPU. Its own tests: CMakeLists.txt here (hostgpu_test).
add_library(nanomx_hostgpu SHARED ${CMAKE_CURRENT_LIST_DIR}/runtime.cc)
target_include_directories(nanomx_hostgpu PUBLIC ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(nanomx_hostgpu PUBLIC CUDA::toolkit Threads::Threads)
target_compile_options(nanomx_hostgpu PRIVATE ${NANOMX_WARNINGS})

set(BLA_VENDOR OpenBLAS)
find_package(BLAS REQUIRED)
add_library(nanomx_hostgpu_cublas SHARED ${CMAKE_CURRENT_LIST_DIR}/cublas.cc)
target_link_libraries(nanomx_hostgpu_cublas PRIVATE nanomx_hostgpu ${BLAS_LIBRARIES})
target_compile_options(nanomx_hostgpu_cublas PRIVATE ${NANOMX_WARNINGS})
