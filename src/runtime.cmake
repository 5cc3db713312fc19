# nanomx_runtime: base → storage → engine → ndarray → ops, one static library (PIC) that the
# shared library `nanomx` links. Included by src/CMakeLists.txt.
set(BLA_VENDOR OpenBLAS)
find_package(BLAS REQUIRED)
file(GLOB NANOMX_RUNTIME_SOURCES CONFIGURE_DEPENDS
     ${CMAKE_CURRENT_LIST_DIR}/base/*.cc
     ${CMAKE_CURRENT_LIST_DIR}/storage/*.cc
     ${CMAKE_CURRENT_LIST_DIR}/engine/*.cc
     ${CMAKE_CURRENT_LIST_DIR}/ndarray/*.cc
     ${CMAKE_CURRENT_LIST_DIR}/ops/*.cc
     ${CMAKE_CURRENT_LIST_DIR}/ops/cpu/*.cc)
add_library(nanomx_runtime STATIC ${NANOMX_RUNTIME_SOURCES})
target_include_directories(nanomx_runtime PUBLIC ${CMAKE_CURRENT_LIST_DIR}/../include
                                          PRIVATE ${CMAKE_CURRENT_LIST_DIR})
target_compile_options(nanomx_runtime PRIVATE ${NANOMX_WARNINGS})
target_link_libraries(nanomx_runtime PUBLIC nanomx_profiler Threads::Threads
                                     PRIVATE ${BLAS_LIBRARIES})
