// `nanomx-trace memory`: the GPU memory profile (`<prefix>-pid_<pid>.csv`, written by nanomx and
// by MXNet on each profiler dump: docs/cuda.md) as a tree of profiler scopes, with the requested
// and actual bytes of everything allocated under each scope, in all and per device.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace nanomx::trace {

// The first line of every profile, exactly as MXNet writes it.
inline constexpr const char* kMemoryProfileHeader =
    R"("Attribute Name","Requested Size","Device","Actual Size","Reuse?")";

// The label of the nvml_amend line in the table and the viewer.
inline constexpr const char* kNvmlLabel = "not allocated by nanomx (NVML)";

// Allocations and their bytes (of a scope, of a scope on one device).
struct MemoryAmount {
  int64_t requested = 0;  // bytes asked for
  int64_t actual = 0;     // bytes handed out: the allocator's bucket size
  uint64_t allocations = 0;
  uint64_t reused = 0;  // of the allocations, those served from the pool
};

// A node of the scope tree: one component of the attributes ("tensordot", "in_arg", "A"), with
// everything allocated at it or under it. An attribute is split on every ':', so
// "tensordot:in_arg:A" adds to tensordot, tensordot:in_arg and tensordot:in_arg:A.
struct MemoryScope {
  std::string name;                       // the component; the root's is empty
  size_t depth = 0;                       // the root 0, top-level scopes 1
  MemoryAmount amount;                    // all devices
  std::map<int, MemoryAmount> by_device;  // device -> its share
  // Indices into MemoryProfile::scopes, largest actual size first, ties by name (byte order).
  std::vector<uint32_t> children;
};

// MXNet's "nvml_amend" rows, one per device: the memory NVML reports for the process beyond the
// allocations listed (the CUDA context, cuBLAS workspaces, ...). Signed: MXNet computes it as an
// unsigned difference, so a process with less than its allocations writes a wrapped 2^64 - x,
// which is read back as -x.
struct NvmlAmend {
  int64_t bytes = 0;
  std::map<int, int64_t> by_device;
};

struct MemoryProfileFile {
  std::string path;
  uint64_t allocations = 0;
  int64_t actual = 0;
};

struct MemoryProfile {
  std::vector<MemoryProfileFile> files;  // in the order given
  std::vector<MemoryScope> scopes;       // [0] is the root: the total
  std::vector<int> devices;              // every device in the files (allocations or NVML)
  std::optional<NvmlAmend> nvml;         // when a file has nvml_amend rows
  const MemoryScope& root() const { return scopes[0]; }
};

// Reads the profiles and sums them (one file per process, say). Throws TraceError naming the
// file, the line and what was expected for a missing, empty or malformed file.
MemoryProfile read_memory_profiles(const std::vector<std::string>& paths);

// The scopes in the order the table prints them: depth first, each node before its children,
// the root left out; scopes deeper than `max_depth` left out (their bytes are already in their
// ancestors'). Computed without recursion, so any nesting a file holds prints.
std::vector<uint32_t> scopes_in_print_order(const MemoryProfile& profile,
                                            std::optional<size_t> max_depth);

// A line's numbers as the table prints them. `memory` and the viewer's panel both use it, so
// they show the same strings.
struct MemoryRowText {
  std::string requested, actual, allocations, reused, share;
  std::vector<std::string> device_actual;  // one per MemoryProfile::devices; "-": none there
};
MemoryRowText memory_row_text(const MemoryProfile& profile, const MemoryScope& scope);
MemoryRowText nvml_row_text(const MemoryProfile& profile);  // needs profile.nvml

// "9 allocations (3 reused from the pool) on 2 devices: 0, 1".
std::string memory_overview(const MemoryProfile& profile);
// A scope's name as the table shows it: "(empty name)" for "" (from "a::b").
std::string scope_label(const std::string& name);

// `memory`'s output. `max_depth` as for scopes_in_print_order.
std::string format_memory_text(const MemoryProfile& profile, std::optional<size_t> max_depth);
std::string format_memory_json(const MemoryProfile& profile, std::optional<size_t> max_depth);

// "512 B", "8.00 MiB", "256.0 KiB": binary units, 2 decimals below 100 of the unit, 1 above.
std::string format_bytes(int64_t bytes);

}  // namespace nanomx::trace
