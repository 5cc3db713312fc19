// The memory planner (plan_memory.h), after nnvm's PlanMemory and its GraphAllocator.
#include "symbol/plan_memory.h"

#include <algorithm>
#include <cstdlib>
#include <map>

#include "nanomx/error.h"

namespace nanomx::symbol {
namespace {

// Free blocks by size; a request takes the smallest block in [size, size * range], else the
// largest in [size / range, size) (which then grows), else a new block.
class Allocator {
 public:
  explicit Allocator(size_t match_range) : range_(match_range) {}

  int request(size_t bytes) {
    if (range_ == 0) return alloc(bytes);
    auto begin = free_.lower_bound(bytes / range_);
    auto mid = free_.lower_bound(bytes);
    auto end = free_.upper_bound(bytes * range_);
    if (mid != end) {
      const int id = mid->second;
      free_.erase(mid);
      return id;
    }
    if (mid != begin) {
      auto it = std::prev(mid);
      const int id = it->second;
      sizes_[static_cast<size_t>(id)] = std::max(sizes_[static_cast<size_t>(id)], bytes);
      free_.erase(it);
      return id;
    }
    return alloc(bytes);
  }
  void release(int id) { free_.emplace(sizes_[static_cast<size_t>(id)], id); }
  const std::vector<size_t>& sizes() const { return sizes_; }

 private:
  int alloc(size_t bytes) {
    sizes_.push_back(bytes);
    return static_cast<int>(sizes_.size() - 1);
  }
  size_t range_;
  std::multimap<size_t, int> free_;
  std::vector<size_t> sizes_;
};

bool env_off(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && std::string_view(v) == "0";
}

}  // namespace

PlanOptions plan_options_from_env() {
  PlanOptions o;
  o.inplace = !env_off("NANOMX_EXEC_ENABLE_INPLACE") && !env_off("MXNET_EXEC_ENABLE_INPLACE");
  if (const char* v = std::getenv("NNVM_EXEC_MATCH_RANGE"); v != nullptr && *v != '\0') {
    char* end = nullptr;
    const long r = std::strtol(v, &end, 10);
    NANOMX_CHECK(*end == '\0' && r >= 0)
        << "NNVM_EXEC_MATCH_RANGE=" << v << " is not a non-negative integer";
    o.match_range = static_cast<size_t>(r);
  }
  return o;
}

MemoryPlan plan_memory(const std::vector<PlanNode>& nodes, const std::vector<PlanEntry>& entries,
                       const PlanOptions& options) {
  const size_t n = entries.size();
  std::vector<int> refs(n, 0);
  for (const PlanNode& node : nodes) {
    for (uint32_t e : node.inputs) {
      NANOMX_CHECK(e < n) << "plan_memory: entry " << e << " out of range";
      ++refs[e];
    }
  }
  for (size_t e = 0; e < n; ++e) refs[e] += entries[e].output ? 1 : 0;

  MemoryPlan plan;
  plan.storage.assign(n, -1);
  plan.inplace_input.assign(n, -1);
  std::vector<bool> assigned(n, false);
  std::vector<int> block_refs;
  Allocator alloc(options.match_range);
  auto block_ref = [&](int id) -> int& {
    if (block_refs.size() <= static_cast<size_t>(id)) block_refs.resize(id + 1, 0);
    return block_refs[static_cast<size_t>(id)];
  };

  for (const PlanNode& node : nodes) {
    std::vector<bool> taken(node.inputs.size(), false);
    if (options.inplace) {
      for (const auto& [in, out] : node.inplace) {
        if (in < 0 || out < 0 || static_cast<size_t>(in) >= node.inputs.size() ||
            static_cast<size_t>(out) >= node.outputs.size() || taken[in]) {
          continue;
        }
        const uint32_t ein = node.inputs[in], eout = node.outputs[out];
        const int sid = plan.storage[ein];
        if (assigned[eout] || entries[eout].external || sid < 0 || block_ref(sid) != 1 ||
            refs[eout] == 0 || entries[eout].elements != entries[ein].elements ||
            entries[eout].dtype_size != entries[ein].dtype_size) {
          continue;
        }
        taken[in] = true;
        assigned[eout] = true;
        plan.storage[eout] = sid;
        plan.inplace_input[eout] = in;
        block_ref(sid) += refs[eout];
      }
    }
    // The rest, largest first.
    std::vector<uint32_t> rest;
    for (uint32_t e : node.outputs) {
      if (!assigned[e] && !entries[e].external) rest.push_back(e);
    }
    std::stable_sort(rest.begin(), rest.end(), [&](uint32_t a, uint32_t b) {
      return entries[a].elements > entries[b].elements;
    });
    for (uint32_t e : rest) {
      if (assigned[e]) continue;  // listed twice
      const int sid = alloc.request(entries[e].elements * 4);
      assigned[e] = true;
      plan.storage[e] = sid;
      block_ref(sid) = refs[e];
    }
    for (uint32_t e : node.inputs) {
      const int sid = plan.storage[e];
      if (sid < 0) continue;
      if (--block_ref(sid) == 0) alloc.release(sid);
    }
    for (uint32_t e : node.outputs) {
      const int sid = plan.storage[e];
      // Written but never read: its block is free again at once.
      if (sid >= 0 && refs[e] == 0 && block_ref(sid) == 0) {
        alloc.release(sid);
        block_ref(sid) = -1;  // released once
      }
    }
  }

  plan.block_bytes.assign(alloc.sizes().size(), 0);
  for (size_t e = 0; e < n; ++e) {
    const int sid = plan.storage[e];
    if (sid < 0) continue;
    size_t& b = plan.block_bytes[static_cast<size_t>(sid)];
    b = std::max(b, entries[e].elements * entries[e].dtype_size);
  }
  for (size_t s : alloc.sizes()) plan.planned_bytes += s;
  for (size_t b : plan.block_bytes) plan.allocated_bytes += b;
  return plan;
}

}  // namespace nanomx::symbol
