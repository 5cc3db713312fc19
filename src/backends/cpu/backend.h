#pragma once

namespace nanomx::cpu {
// Registers the CPU backend (src/backends/backends.cc calls it at load).
void register_cpu_backend();
}  // namespace nanomx::cpu
