// The GPU memory profile (docs/cuda.md, MXNet's gpu_memory_profile_filename_prefix): while
// memory profiling is on, each GPU allocation is kept in a table with the profiler scope at the
// time, and dump() writes the live entries as `<prefix>-pid_<pid>.csv`.
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "backends/cuda/nvml_process_memory.h"
#include "nanomx/storage.h"

namespace nanomx::storage {

// The CUDA allocator calls these for every block it hands out / takes back while the profiler
// records memory (profiler::active(kMemory)); `reused`: served from the pool; `attribute`:
// scope + name (storage::allocation_attribute of the allocating thread's label).
void gpu_memory_profile_alloc(const void* data, std::string attribute, size_t requested, int dev_id,
                              size_t actual, bool reused);
void gpu_memory_profile_free(const void* data);
// An arena's regions (Arena::describe): the block's entry is written as one row per region
// (requested: the region's bytes; actual: the bytes up to the next region, the last one to the
// block's end, so the rows still add up to the block) instead of one row for the whole block.
// A block without an entry (allocated while memory profiling was off) is left alone.
void gpu_memory_profile_describe(const void* data, std::span<const ArenaRegion> regions);
// What the driver accounts to this process on a device (nvml_process_memory's signature).
using ProcessGpuMemory = std::optional<uint64_t> (*)(int dev_id, std::string* why);

// Writes the live entries to `<prefix>-pid_<pid>.csv` (MXNet's columns, rows sorted by
// attribute), then, per device with entries, MXNet's amend row
// `"nvml_amend","<process memory - sum of actual>","<dev>","<same>","0"` where `process_memory`
// knows it (a signed number: MXNet's unsigned subtraction wraps when the driver reports less);
// where it does not, the reason is printed once per process. Returns the path, or "" when the
// file cannot be opened (nothing happens then, as MXNet). The entries are kept.
std::string write_gpu_memory_profile(const std::string& prefix,
                                     ProcessGpuMemory process_memory = nvml_process_memory);
// Forgets every entry (tests).
void clear_gpu_memory_profile();

}  // namespace nanomx::storage
