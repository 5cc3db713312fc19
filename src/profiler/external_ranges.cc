#include "profiler/external_ranges.h"

#include <atomic>

namespace nanomx::profiler {
namespace {
// Set at load, before any range; read only while profiling.
constinit std::atomic<void (*)(const char*)> g_push{nullptr};
constinit std::atomic<void (*)()> g_pop{nullptr};
}  // namespace

void set_external_ranges(ExternalRanges ranges) {
  g_pop.store(ranges.pop, std::memory_order_release);
  g_push.store(ranges.push, std::memory_order_release);
}

bool external_ranges_on() { return g_push.load(std::memory_order_acquire) != nullptr; }

void external_range_push(const char* name) {
  if (auto push = g_push.load(std::memory_order_acquire)) push(name);
}

void external_range_pop() {
  if (auto pop = g_pop.load(std::memory_order_acquire)) pop();
}

}  // namespace nanomx::profiler
