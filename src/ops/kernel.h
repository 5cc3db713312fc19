// Kernels, registered per operator and device type apart from the operator's definition: a
// device backend adds its kernels without touching any definition.
#pragma once

#include <functional>
#include <span>
#include <string_view>

#include "nanomx/context.h"
#include "nanomx/ndarray.h"
#include "ops/op.h"

namespace nanomx::ops {

// Runs on an engine worker with the parsed attributes, the inputs, and the outputs already
// allocated with their inferred shapes and dtypes (a temporary where an output would alias an
// input the operator does not declare in place).
using Kernel = std::function<void(const ParsedParams& p, std::span<const NDArray> in,
                                  std::span<const NDArray> out)>;

// A backend's kernels for `device` (the CPU backend: kCPU, serving cpu_pinned and cpu_shared
// too): `register_kernels` calls register_kernel for each of them. Called at load; the registry
// calls each provider once when it is built, after every operator, in registration order.
void register_kernel_provider(DeviceType device, void (*register_kernels)());
// Registers `op`'s (or an alias's) kernel for `device`; throws for an unknown operator or a
// second kernel for the same pair, or a device type whose backend registered no kernel provider.
// Safe to call at any time after the operators are registered.
void register_kernel(std::string_view op, DeviceType device, Kernel kernel);
// The kernel for `device` (cpu_pinned and cpu_shared use cpu's), or null.
const Kernel* find_kernel(const Op& op, DeviceType device);
// As find_kernel; throws "<op>: no kernel for device <device> (registered: cpu)".
const Kernel& get_kernel(const Op& op, DeviceType device);

}  // namespace nanomx::ops
