// The executor's memory planner (MXNet's nnvm PlanMemory): gives every internal entry of a
// graph a storage block, sharing blocks between entries whose lifetimes do not overlap and
// letting an output take its input's block where the operator computes in place. Works on a
// flattened graph of entry ids, so it knows nothing of operators or arrays.
// docs/symbolic.md ("Memory planning") describes the rules.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace nanomx::symbol {

struct PlanEntry {
  size_t elements = 0;    // number of elements
  size_t dtype_size = 4;  // bytes per element
  bool external = false;  // a bound array (argument, gradient, head gradient): not planned
  bool output = false;    // a graph output: never freed
};

struct PlanNode {
  std::vector<uint32_t> inputs;   // entry ids read (repeats count)
  std::vector<uint32_t> outputs;  // entry ids written
  // (input position, output position) pairs the operator may compute in place.
  std::vector<std::pair<int, int>> inplace;
};

struct PlanOptions {
  bool inplace = true;  // NANOMX_EXEC_ENABLE_INPLACE / MXNET_EXEC_ENABLE_INPLACE
  // NNVM_EXEC_MATCH_RANGE: a free block of size in [size / r, size * r] may be reused; 0: no
  // block is ever reused.
  size_t match_range = 16;
};

struct MemoryPlan {
  // Per entry: its block, or -1 for an external entry.
  std::vector<int> storage;
  // Per entry: the input position whose block it took in place, or -1.
  std::vector<int> inplace_input;
  // Per block: the bytes it must hold (the largest entry mapped to it, true element sizes).
  std::vector<size_t> block_bytes;
  // MXNet's storage_allocated_bytes: the blocks' sizes as the planner counts them (4 bytes an
  // element, whatever the dtype), which debug_str reports.
  size_t planned_bytes = 0;
  // The sum of block_bytes: what the executor allocates.
  size_t allocated_bytes = 0;
};

// Plans `nodes` (in execution order) over `entries`.
MemoryPlan plan_memory(const std::vector<PlanNode>& nodes, const std::vector<PlanEntry>& entries,
                       const PlanOptions& options);

// The options from the environment: NANOMX_EXEC_ENABLE_INPLACE (or MXNET_EXEC_ENABLE_INPLACE)
// = 0 turns in place off, NNVM_EXEC_MATCH_RANGE sets the match range (0: no reuse).
PlanOptions plan_options_from_env();

}  // namespace nanomx::symbol
