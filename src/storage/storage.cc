// The allocator registry, the free functions that dispatch through it, and arenas.
#include "nanomx/storage.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstring>
#include <string>

#include "base/backend.h"
#include "nanomx/error.h"
#include "nanomx/gpu.h"
#include "nanomx/profiler.h"
#include "storage/copy.h"
#include "storage/cpu_allocator.h"

namespace nanomx::storage {
namespace {

// Indexed by MXNet's device type code (1 cpu, 2 gpu, 3 cpu_pinned, 5 cpu_shared). Read without a
// lock on every allocation; registration is rare (start-up, tests).
constexpr size_t kTypeSlots = 8;
using Table = std::array<std::atomic<DeviceAllocator*>, kTypeSlots>;

using Provider = void (*)(AllocatorInstall);
constexpr size_t kMaxProviders = 8;
// Constant-initialised: providers register at load, before dynamic initialisation.
constinit std::array<std::atomic<Provider>, kMaxProviders> g_providers{};

Table* g_building = nullptr;  // the table while its providers run (first use, one thread)

Table& table() {
  // Never destroyed: blocks may be released during static destruction. Built at first use, so
  // that no static initialization order is involved: the CPU allocator serves the host types,
  // then each backend's provider installs its own.
  static Table* instance = [] {
    auto* t = new Table{};
    for (DeviceType type : {DeviceType::kCPU, DeviceType::kCPUPinned, DeviceType::kCPUShared}) {
      (*t)[static_cast<size_t>(type)].store(&cpu_allocator(), std::memory_order_release);
    }
    g_building = t;
    for (auto& p : g_providers) {
      Provider provider = p.load(std::memory_order_acquire);
      if (provider == nullptr) break;
      provider([](DeviceType type, DeviceAllocator* allocator) {
        (*g_building)[static_cast<size_t>(type)].store(allocator, std::memory_order_release);
      });
    }
    g_building = nullptr;
    return t;
  }();
  return *instance;
}

std::string type_name(DeviceType type) {
  const std::string s = Context{type, 0}.str();  // "gpu(0)"
  return s.substr(0, s.find('('));
}

size_t slot_of(DeviceType type) {
  const auto code = static_cast<size_t>(type);
  NANOMX_CHECK(code < kTypeSlots) << "storage: invalid device type code " << code
                                  << " (valid: 1 cpu, 2 gpu, 3 cpu_pinned, 5 cpu_shared)";
  return code;
}

void check_alignment(size_t alignment, const char* where) {
  NANOMX_CHECK(std::has_single_bit(alignment) && alignment <= kAlignment)
      << where << ": alignment " << alignment << " must be a power of two of at most "
      << kAlignment;
}

}  // namespace

void register_allocator_provider(void (*provider)(AllocatorInstall install)) {
  for (auto& p : g_providers) {
    Provider empty = nullptr;
    if (p.compare_exchange_strong(empty, provider, std::memory_order_acq_rel)) return;
  }
  NANOMX_THROW() << "storage: more than " << kMaxProviders << " allocator providers";
}

void register_allocator(DeviceType type, DeviceAllocator* allocator) {
  auto& slot = table()[slot_of(type)];
  if (allocator == nullptr) {
    slot.store(nullptr, std::memory_order_release);
    return;
  }
  DeviceAllocator* current = nullptr;
  NANOMX_CHECK(slot.compare_exchange_strong(current, allocator, std::memory_order_acq_rel) ||
               current == allocator)
      << "storage: device type " << type_name(type) << " already has an allocator ("
      << current->name() << "); cannot register " << allocator->name();
}

DeviceAllocator& allocator_for(DeviceType type) {
  DeviceAllocator* allocator = table()[slot_of(type)].load(std::memory_order_acquire);
  NANOMX_CHECK(allocator != nullptr)
      << "storage: no allocator for device type " << type_name(type) << " in this build";
  return *allocator;
}

Block allocate(size_t size, Context ctx) {
  DeviceAllocator* allocator = table()[slot_of(ctx.dev_type)].load(std::memory_order_acquire);
  NANOMX_CHECK(allocator != nullptr)
      << "cannot allocate " << size << " bytes on " << ctx.str()
      << ": no allocator for device type " << type_name(ctx.dev_type) << " in this build";
  return allocator->allocate(size, ctx);
}

void release(Block& block) {
  if (block.data == nullptr) return;
  allocator_for(block.ctx.dev_type).release(block);
}

namespace {
// Each registered allocator once (one may serve several device types).
template <typename F>
void for_each_allocator(F&& f) {
  std::array<DeviceAllocator*, kTypeSlots> seen{};
  size_t n = 0;
  for (auto& slot : table()) {
    DeviceAllocator* a = slot.load(std::memory_order_acquire);
    if (a == nullptr || std::find(seen.begin(), seen.begin() + n, a) != seen.begin() + n) continue;
    seen[n++] = a;
    f(*a);
  }
}
}  // namespace

void release_pooled() {
  for_each_allocator([](DeviceAllocator& a) { a.release_pooled(); });
}

size_t pooled_bytes() {
  size_t total = 0;
  for_each_allocator([&total](DeviceAllocator& a) { total += a.pooled_bytes(); });
  return total;
}

void copy_bytes(void* dst, Context dst_ctx, const void* src, Context src_ctx, size_t bytes) {
  if (bytes == 0 || dst == src) return;
  if (dst_ctx.is_cpu() && src_ctx.is_cpu()) {
    std::memmove(dst, src, bytes);
    return;
  }
  const DeviceType device = dst_ctx.is_cpu() ? src_ctx.dev_type : dst_ctx.dev_type;
  const DeviceBackend* backend = device_backend(device);
  NANOMX_CHECK(backend != nullptr && backend->copy != nullptr)
      << "copy between " << src_ctx.str() << " and " << dst_ctx.str()
      << ": this build has no CUDA support";
  backend->copy(dst, dst_ctx, src, src_ctx, bytes);
}

namespace {
thread_local AllocationLabel t_label;
}  // namespace

AllocationLabel exchange_allocation_label(AllocationLabel label) {
  const AllocationLabel previous = t_label;
  t_label = label;
  return previous;
}

AllocationLabel current_allocation_label() { return t_label; }

std::string allocation_attribute(AllocationLabel label) {
  std::string attribute = label.scope.empty() ? profiler::scope() : std::string(label.scope);
  attribute += label.name.empty() ? std::string_view("unknown") : label.name;
  return attribute;
}

std::shared_ptr<Arena> Arena::create(size_t planned_bytes, Context ctx) {
  Block block = allocate(planned_bytes, ctx);
  try {
    return std::shared_ptr<Arena>(new Arena(block));
  } catch (...) {
    release(block);
    throw;
  }
}

Arena::~Arena() { release(block_); }

void* Arena::region(size_t offset, size_t bytes, size_t alignment) const {
  check_alignment(alignment, "arena region");
  NANOMX_CHECK(offset % alignment == 0)
      << "arena region: offset " << offset << " is not a multiple of its alignment " << alignment;
  NANOMX_CHECK(offset <= block_.size && bytes <= block_.size - offset)
      << "arena region: [" << offset << ", " << offset << " + " << bytes
      << ") does not fit in an arena of " << block_.size << " bytes on " << block_.ctx.str();
  if (block_.data == nullptr) return nullptr;  // an empty arena: only empty regions
  return static_cast<char*>(block_.data) + offset;
}

void Arena::describe(std::span<const ArenaRegion> regions) const {
  size_t end = 0;
  for (const ArenaRegion& r : regions) {
    NANOMX_CHECK(r.offset >= end && r.offset <= block_.size && r.bytes <= block_.size - r.offset)
        << "arena describe: region \"" << r.attribute << "\" [" << r.offset << ", " << r.offset
        << " + " << r.bytes << ") overlaps the one before it (which ends at " << end
        << ") or does not fit in an arena of " << block_.size << " bytes";
    end = r.offset + r.bytes;
  }
  if (block_.data != nullptr) allocator_for(block_.ctx.dev_type).describe_regions(block_, regions);
}

size_t ArenaLayout::add(size_t bytes, size_t alignment) {
  check_alignment(alignment, "arena layout");
  const size_t offset = (end_ + alignment - 1) & ~(alignment - 1);
  NANOMX_CHECK(offset >= end_ && bytes <= SIZE_MAX - offset)
      << "arena layout: a region of " << bytes << " bytes after " << end_ << " overflows";
  end_ = offset + bytes;
  return offset;
}

}  // namespace nanomx::storage
