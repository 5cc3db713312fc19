// Storage: the allocator registry (dispatch per device type) and arenas, with NDArrays placed in
// an arena.
#include "nanomx/storage.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "nanomx/error.h"
#include "nanomx/gpu.h"
#include "nanomx/ndarray.h"
#include "nanomx/ops.h"

namespace nanomx {
namespace {

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// Stands in for a device layer's allocator (a CUDA one, later): plain host memory, counted.
class FakeAllocator final : public storage::DeviceAllocator {
 public:
  storage::Block allocate(size_t size, Context ctx) override {
    ++allocations;
    storage::Block block;
    block.ctx = ctx;
    block.size = size;
    if (size == 0) return block;
    block.capacity = (size + storage::kAlignment - 1) / storage::kAlignment * storage::kAlignment;
    block.data = std::aligned_alloc(storage::kAlignment, block.capacity);
    return block;
  }
  void release(storage::Block& block) override {
    if (block.data == nullptr) return;
    ++releases;
    std::free(block.data);
    block.data = nullptr;
  }
  void release_pooled() override { ++release_pooled_calls; }
  size_t pooled_bytes() override { return 128; }
  const char* name() const override { return "fake"; }

  std::atomic<int> allocations{0};
  std::atomic<int> releases{0};
  int release_pooled_calls = 0;
};

// Registers the fake allocator for gpu for one test (in place of the CUDA one where a GPU is
// visible).
class ScopedFake {
 public:
  ScopedFake() {
    try {
      previous_ = &storage::allocator_for(DeviceType::kGPU);
    } catch (const Error&) {  // none: no GPU
    }
    storage::register_allocator(DeviceType::kGPU, nullptr);
    storage::register_allocator(DeviceType::kGPU, &fake);
  }
  ~ScopedFake() {
    storage::register_allocator(DeviceType::kGPU, nullptr);
    if (previous_ != nullptr) storage::register_allocator(DeviceType::kGPU, previous_);
  }
  FakeAllocator fake;

 private:
  storage::DeviceAllocator* previous_ = nullptr;
};

TEST(StorageRegistry, CpuTypesUseTheBuiltInAllocator) {
  EXPECT_STREQ(storage::allocator_for(DeviceType::kCPU).name(), "cpu pooled");
  // Where a GPU is visible cpu_pinned is page-locked memory (gpu_ops_test checks it).
  if (nanomx::num_gpus() == 0) {
    EXPECT_EQ(&storage::allocator_for(DeviceType::kCPUPinned),
              &storage::allocator_for(DeviceType::kCPU));
  }
  EXPECT_EQ(&storage::allocator_for(DeviceType::kCPUShared),
            &storage::allocator_for(DeviceType::kCPU));
}

TEST(StorageRegistry, DeviceWithoutAllocatorIsAClearError) {
  if (nanomx::num_gpus() > 0) GTEST_SKIP() << "a GPU is visible: gpu has its CUDA allocator";
  EXPECT_NE(error_of([] {
              storage::allocator_for(DeviceType::kGPU);
            }).find("no allocator for device type gpu in this build"),
            std::string::npos);
  const std::string e = error_of([] { storage::allocate(16, Context{DeviceType::kGPU, 1}); });
  EXPECT_NE(e.find("cannot allocate 16 bytes on gpu(1)"), std::string::npos) << e;
  EXPECT_NE(error_of([] {
              storage::allocator_for(static_cast<DeviceType>(42));
            }).find("invalid device type code 42"),
            std::string::npos);
}

TEST(StorageRegistry, FreeFunctionsDispatchToTheRegisteredAllocator) {
  ScopedFake scoped;
  const size_t cpu_pooled = storage::pooled_bytes() - 128;  // the fake adds 128
  storage::Block block = storage::allocate(100, Context{DeviceType::kGPU, 0});
  EXPECT_EQ(scoped.fake.allocations.load(), 1);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(block.data) % storage::kAlignment, 0u);
  EXPECT_EQ(block.ctx, (Context{DeviceType::kGPU, 0}));
  storage::release(block);
  EXPECT_EQ(scoped.fake.releases.load(), 1);
  EXPECT_EQ(block.data, nullptr);
  EXPECT_EQ(storage::pooled_bytes(), cpu_pooled + 128);
  storage::release_pooled();
  EXPECT_EQ(scoped.fake.release_pooled_calls, 1);
  // CPU requests still go to the CPU allocator.
  storage::Block cpu = storage::allocate(100, Context::cpu(0));
  EXPECT_EQ(scoped.fake.allocations.load(), 1);
  storage::release(cpu);
  // A second allocator for the same type is refused.
  FakeAllocator other;
  EXPECT_NE(error_of([&] {
              storage::register_allocator(DeviceType::kGPU, &other);
            }).find("already has an allocator (fake)"),
            std::string::npos);
}

TEST(StorageRegistry, ArenaUsesItsDevicesAllocator) {
  ScopedFake scoped;
  {
    auto arena = storage::Arena::create(1000, Context{DeviceType::kGPU, 0});
    EXPECT_EQ(scoped.fake.allocations.load(), 1);
    EXPECT_EQ(arena->ctx(), (Context{DeviceType::kGPU, 0}));
  }
  EXPECT_EQ(scoped.fake.releases.load(), 1);
}

TEST(ArenaLayout, OffsetsAlignedAndNotOverlapping) {
  storage::ArenaLayout layout;
  const std::vector<std::pair<size_t, size_t>> requests = {
      {10, 64}, {1, 8}, {100, 4}, {0, 64}, {7, 2}, {4096, 64}, {3, 1}, {33, 16}};
  std::vector<std::pair<size_t, size_t>> placed;  // [begin, end)
  for (const auto& [bytes, alignment] : requests) {
    const size_t offset = layout.add(bytes, alignment);
    EXPECT_EQ(offset % alignment, 0u) << bytes << " " << alignment;
    for (const auto& [b, e] : placed) {
      EXPECT_TRUE(offset + bytes <= b || offset >= e || bytes == 0)
          << "[" << offset << ", " << offset + bytes << ") overlaps [" << b << ", " << e << ")";
    }
    placed.emplace_back(offset, offset + bytes);
    EXPECT_GE(layout.planned_bytes(), offset + bytes);
  }
  EXPECT_EQ(placed[0].first, 0u);
  EXPECT_EQ(placed[1].first, 16u);  // 10 rounded up to 8
  EXPECT_EQ(layout.planned_bytes(), placed.back().second);
  EXPECT_NE(error_of([&] { layout.add(8, 3); }).find("power of two"), std::string::npos);
  EXPECT_NE(error_of([&] { layout.add(8, 128); }).find("at most 64"), std::string::npos);
}

TEST(Arena, OneBlockCountedOnceAndRegionsChecked) {
  const Context ctx = Context::cpu(0);
  const int slot = ctx.profiler_slot();
  engine::Engine::get().wait_all();
  const uint64_t before = profiler::memory_in_use(slot);
  {
    auto arena = storage::Arena::create(3000, ctx);
    EXPECT_EQ(arena->planned_bytes(), 3000u);
    EXPECT_EQ(profiler::memory_in_use(slot), before + storage::size_class(3000));
    auto* base = static_cast<char*>(arena->region(0, 3000));
    EXPECT_EQ(reinterpret_cast<uintptr_t>(base) % storage::kAlignment, 0u);
    EXPECT_EQ(arena->region(128, 64), base + 128);
    EXPECT_EQ(arena->region(2999, 1, 1), base + 2999);
    EXPECT_NE(
        error_of([&] { arena->region(2990, 64, 2); }).find("does not fit in an arena of 3000"),
        std::string::npos);
    EXPECT_NE(error_of([&] { arena->region(4, 8); }).find("not a multiple of its alignment 64"),
              std::string::npos);
    // Arrays in the arena: no further memory counted.
    NDArray a = NDArray::in_arena(arena, 0, Shape{4, 8});
    NDArray b = NDArray::in_arena(arena, 1024, Shape{4, 8}, DType::kFloat64);
    EXPECT_EQ(profiler::memory_in_use(slot), before + storage::size_class(3000));
    EXPECT_EQ(a.data(), base);
    EXPECT_EQ(b.data(), base + 1024);
    EXPECT_NE(a.var(), b.var());
    EXPECT_EQ(a.ctx(), ctx);
    EXPECT_NE(error_of([&] { NDArray::in_arena(arena, 2, Shape{2}); }).find("alignment 4"),
              std::string::npos);
    EXPECT_NE(error_of([&] { NDArray::in_arena(arena, 2048, Shape{1000}); }).find("does not fit"),
              std::string::npos);
    EXPECT_NE(error_of([] { NDArray::in_arena(nullptr, 0, Shape{1}); }).find("null arena"),
              std::string::npos);
  }
  engine::Engine::get().wait_all();
  EXPECT_EQ(profiler::memory_in_use(slot), before);
}

// Operators read and write arrays placed in one arena; the arrays keep the arena alive after the
// planner's own reference is gone, until their last use finished.
TEST(Arena, NDArraysComputeAndOutliveTheCreatorsReference) {
  storage::ArenaLayout layout;
  const size_t n = 1000;
  const size_t off_a = layout.add(n * sizeof(float));
  const size_t off_b = layout.add(n * sizeof(float));
  const size_t off_c = layout.add(n * sizeof(float));
  auto arena = storage::Arena::create(layout.planned_bytes(), Context::cpu(0));
  NDArray a = NDArray::in_arena(arena, off_a, Shape{static_cast<int64_t>(n)});
  NDArray b = NDArray::in_arena(arena, off_b, Shape{static_cast<int64_t>(n)});
  NDArray c = NDArray::in_arena(arena, off_c, Shape{static_cast<int64_t>(n)});
  std::weak_ptr<storage::Arena> weak = arena;
  arena.reset();
  std::vector<float> va(n), vb(n);
  for (size_t i = 0; i < n; ++i) {
    va[i] = static_cast<float>(i);
    vb[i] = 2.0f * static_cast<float>(i) + 1.0f;
  }
  a.sync_copy_from_cpu(va.data(), n * sizeof(float));
  b.sync_copy_from_cpu(vb.data(), n * sizeof(float));
  ops::invoke("broadcast_add", std::vector<NDArray>{a, b}, {}, std::vector<NDArray>{c});
  NDArray view = c.slice(10, 20);
  a = NDArray();
  b = NDArray();
  c = NDArray();
  EXPECT_FALSE(weak.expired());  // the view holds it
  const std::vector<float> got = view.to_vector<float>();
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i], 3.0f * static_cast<float>(i + 10) + 1.0f) << i;
  }
  view = NDArray();
  engine::Engine::get().wait_all();
  EXPECT_TRUE(weak.expired());
}

}  // namespace
}  // namespace nanomx
