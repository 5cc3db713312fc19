// Imperative operators: a registry keyed by MXNet's operator names. Each operator parses its
// string attributes (as MXImperativeInvoke receives them), infers its outputs' shapes and
// dtypes, and pushes the kernel for the outputs' device to the engine, named after the operator
// (docs/runtime.md, "Operators").
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "nanomx/ndarray.h"

// The C++ API: exported from libnanomx.so (nanomx/export.h).
#pragma GCC visibility push(default)

namespace nanomx::ops {

using Attrs = std::vector<std::pair<std::string, std::string>>;

struct Op;  // defined in src/ops/op.h

// The operator registered under `name` (or an alias); null when there is none.
const Op* find_op(std::string_view name);
// As find_op, but throws "unknown operator '<name>'".
const Op& get_op(std::string_view name);
// Every registered name and alias, sorted.
std::vector<std::string> list_op_names();
const std::string& op_name(const Op& op);

// Runs op on inputs and returns every output (SliceChannel has several). With `outputs` empty
// the results are new arrays; otherwise there is one output array per result, written into
// (their shapes and dtypes must be what the op produces) and returned. Throws, on the calling
// thread, for bad inputs or attributes; a kernel failure is raised by the next wait on the output
// (see engine.h).
std::vector<NDArray> invoke(const Op& op, std::span<const NDArray> inputs, const Attrs& attrs,
                            std::span<const NDArray> outputs = {});
// As invoke, for an operator with one output: that result without a vector around it. Throws,
// before running anything, for an operator with several outputs.
NDArray invoke_one(const Op& op, std::span<const NDArray> inputs, const Attrs& attrs,
                   std::span<const NDArray> outputs = {});
std::vector<NDArray> invoke(std::string_view name, std::span<const NDArray> inputs,
                            const Attrs& attrs = {}, std::span<const NDArray> outputs = {});

// Seeds the generator behind _random_uniform / _random_normal (ordered with pending random ops).
void seed_random(uint64_t seed);

}  // namespace nanomx::ops

#pragma GCC visibility pop
