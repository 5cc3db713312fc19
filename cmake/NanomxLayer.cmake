# nanomx_layer(NAME [PUBLIC deps...] [PRIVATE deps...] [SOURCES files...])
#
# One static library per layer (src/<layer>/), PIC so that libnanomx.so can carry it, and built
# with hidden visibility: libnanomx.so exports only what nanomx/export.h says (the C API and
# the declarations of include/nanomx/).
#
# The layer order is profiler < base < storage < engine < ndarray < ops < backends < symbol <
# autograd < io < kvstore < c_api. A layer names the layers it uses: PUBLIC when its public
# header exposes their types, PRIVATE otherwise. The dependency is enforced twice: scripts/check-layers rejects an #include of a higher layer, and
# `nanomx_<layer>_link_check` links the layer alone with its declared dependencies into a shared
# object with --no-undefined, so a call into a layer it does not declare fails the build.
function(nanomx_layer name)
  cmake_parse_arguments(L "" "" "PUBLIC;PRIVATE;SOURCES" ${ARGN})
  set(target nanomx_${name})
  add_library(${target} STATIC ${L_SOURCES})
  set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON
                                             CXX_VISIBILITY_PRESET hidden
                                             CUDA_VISIBILITY_PRESET hidden)
  target_include_directories(${target}
    PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
    PRIVATE ${PROJECT_SOURCE_DIR}/src)
  # nvcc takes warnings in its own syntax (the CUDA backend's .cu files, docs/cuda.md).
  target_compile_options(${target} PRIVATE "$<$<COMPILE_LANGUAGE:CXX>:${NANOMX_WARNINGS}>"
                                           $<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings>)
  target_link_libraries(${target} PUBLIC ${L_PUBLIC} PRIVATE ${L_PRIVATE})

  # The link check: this layer's objects plus only what it declares must resolve every symbol.
  # Sanitizer and fuzz builds skip it (their runtime symbols are resolved by the final executable).
  if(NOT NANOMX_SANITIZE AND NOT NANOMX_FUZZ)
    set(check ${target}_link_check)
    add_library(${check} SHARED ${PROJECT_SOURCE_DIR}/cmake/link_check.cc)
    target_link_libraries(${check} PRIVATE
      -Wl,--whole-archive ${target} -Wl,--no-whole-archive ${L_PUBLIC} ${L_PRIVATE}
      -Wl,--no-undefined)
    add_dependencies(${check} ${target})
  endif()
endfunction()
