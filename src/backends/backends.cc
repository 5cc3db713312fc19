// Registers every backend of this build, in the order of src/backends/CMakeLists.txt, when the
// program or library is loaded: before any ordinary static initializer (constructor priority
// 101), so that every other part of the process sees them. Registration only fills tables
// (devices are asked lazily, on first use), so it costs nothing measurable at load.
#define NANOMX_BACKEND(name)        \
  namespace nanomx::name {          \
  void register_##name##_backend(); \
  }
#include "backends/backend_list.inc"
#undef NANOMX_BACKEND

namespace {

__attribute__((constructor(101))) void register_backends() {
#define NANOMX_BACKEND(name) nanomx::name::register_##name##_backend();
#include "backends/backend_list.inc"
#undef NANOMX_BACKEND
}

}  // namespace
