// NDArray: storage, views, copies, synchronous host copies against the engine, memory counters.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "nanomx/error.h"
#include "nanomx/profiler.h"
#include "nanomx/storage.h"
#include "test_util.h"

namespace nanomx {
namespace {

using test::error_of;
using test::make;

TEST(DType, SizesNamesAndCodes) {
  EXPECT_EQ(dtype_size(DType::kFloat16), 2u);
  EXPECT_EQ(dtype_size(DType::kInt64), 8u);
  EXPECT_EQ(static_cast<int>(parse_dtype("uint8")), 3);
  EXPECT_STREQ(dtype_name(DType::kInt8), "int8");
  EXPECT_NE(error_of([] { parse_dtype("bool"); }).find("float32"), std::string::npos);
}

TEST(DType, HalfConversionRoundsToNearestEven) {
  for (float f : {0.0f, 1.0f, -2.5f, 65504.0f, 6.103515625e-05f, 5.9604645e-08f, 0.1f, 1000.3f}) {
    const float back = static_cast<float>(half(f));
    EXPECT_LE(std::abs(back - f), std::abs(f) * 0.001f + 6e-8f) << f;
  }
  EXPECT_EQ(half(1.0f).bits, 0x3c00);
  EXPECT_EQ(half(65504.0f).bits, 0x7bff);
  EXPECT_EQ(half(65520.0f).bits, 0x7c00);            // rounds to infinity
  EXPECT_EQ(half(1.0f + 1.0f / 2048).bits, 0x3c00);  // halfway, ties to even
  EXPECT_EQ(half(1.0f + 3.0f / 2048).bits, 0x3c02);
  EXPECT_EQ(half(5.9604645e-08f).bits, 0x0001);  // smallest subnormal
  EXPECT_TRUE(std::isnan(static_cast<float>(half(NAN))));
  // Every half survives a round trip through float.
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    half h;
    h.bits = static_cast<uint16_t>(bits);
    const float f = static_cast<float>(h);
    if (std::isnan(f)) continue;
    ASSERT_EQ(half(f).bits, h.bits) << bits;
  }
}

TEST(DType, FromDoubleWrapsLikeNumpy) {
  EXPECT_EQ(from_double<uint8_t>(-3.7), 253);
  EXPECT_EQ(from_double<int8_t>(200.0), -56);
  EXPECT_EQ(from_double<int32_t>(-2.9), -2);
}

TEST(Shape, SizeStridesAndText) {
  EXPECT_EQ(Shape({2, 3, 4}).size(), 24);
  EXPECT_EQ(Shape().size(), 1);
  EXPECT_EQ(Shape({0, 5}).size(), 0);
  EXPECT_EQ(Shape({2, 3, 4}).strides(), (std::vector<int64_t>{12, 4, 1}));
  EXPECT_EQ(Shape({5}).str(), "(5,)");
  EXPECT_EQ(Shape({2, 3}).str(), "(2,3)");
  EXPECT_NE(error_of([] { Shape({int64_t{1} << 62, 8}).size(); }).find("int64"), std::string::npos);
}

TEST(Storage, AlignedPooledAndCounted) {
  const Context ctx = Context::cpu(0);
  const int slot = ctx.profiler_slot();
  const uint64_t before = profiler::memory_in_use(slot);
  storage::Block a = storage::allocate(1000, ctx);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a.data) % storage::kAlignment, 0u);
  EXPECT_EQ(a.capacity, storage::size_class(1000));
  EXPECT_EQ(profiler::memory_in_use(slot), before + a.capacity);
  void* first = a.data;
  storage::release(a);
  EXPECT_EQ(profiler::memory_in_use(slot), before);
  storage::Block b = storage::allocate(900, ctx);  // same size class: reused from the pool
  EXPECT_EQ(b.data, first);
  storage::release(b);
  storage::Block empty = storage::allocate(0, ctx);
  EXPECT_EQ(empty.data, nullptr);
  storage::release(empty);
  storage::release_pooled();
  EXPECT_EQ(storage::pooled_bytes(), 0u);
}

TEST(NDArray, CreateCopyInAndOutEveryDType) {
  for (int code = 0; code <= 6; ++code) {
    const DType dtype = static_cast<DType>(code);
    NDArray a(Shape{2, 3}, Context::cpu(0), dtype);
    std::vector<uint8_t> bytes(a.nbytes());
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 7 + 1);
    a.sync_copy_from_cpu(bytes.data(), bytes.size());
    std::vector<uint8_t> back(a.nbytes());
    a.sync_copy_to_cpu(back.data(), back.size());
    EXPECT_EQ(back, bytes) << dtype_name(dtype);
    EXPECT_EQ(a.nbytes(), 6 * dtype_size(dtype));
  }
}

TEST(NDArray, ZeroSizeAndNone) {
  NDArray z(Shape{0, 4}, Context::cpu(0));
  EXPECT_EQ(z.size(), 0);
  EXPECT_EQ(z.data(), nullptr);
  z.sync_copy_from_cpu(nullptr, 0);
  z.wait_to_read();
  NDArray none;
  EXPECT_TRUE(none.is_none());
  EXPECT_NE(error_of([&] { none.var(); }).find("none"), std::string::npos);
}

TEST(NDArray, ViewsShareStorage) {
  NDArray a = make<float>(Shape{4, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  NDArray rows = a.slice(1, 3);
  EXPECT_EQ(rows.shape(), (Shape{2, 2}));
  EXPECT_EQ(rows.to_vector<float>(), (std::vector<float>{2, 3, 4, 5}));
  EXPECT_EQ(a.at(3).to_vector<float>(), (std::vector<float>{6, 7}));
  EXPECT_EQ(a.at(3).shape(), (Shape{2}));
  NDArray flat = a.reshape(Shape{8});
  const std::vector<float> ones(4, 1.0f);
  rows.sync_copy_from_cpu(ones.data(), ones.size() * sizeof(float));
  EXPECT_EQ(flat.to_vector<float>(), (std::vector<float>{0, 1, 1, 1, 1, 1, 6, 7}));
  EXPECT_TRUE(rows.same_storage(a));
  EXPECT_NE(error_of([&] { a.slice(3, 5); }).find("out of bounds"), std::string::npos);
  EXPECT_NE(error_of([&] { a.reshape(Shape{3, 3}); }).find("(3,3)"), std::string::npos);
}

TEST(NDArray, CopyToIsASeparateBuffer) {
  NDArray a = make<int32_t>(Shape{3}, {1, 2, 3});
  NDArray b = a.copy_to(Context::cpu(0));
  EXPECT_FALSE(b.same_storage(a));
  a.sync_copy_from_cpu(std::vector<int32_t>{9, 9, 9}.data(), 12);
  EXPECT_EQ(b.to_vector<int32_t>(), (std::vector<int32_t>{1, 2, 3}));
  NDArray c(Shape{4}, Context::cpu(0), DType::kInt32);
  EXPECT_NE(error_of([&] { c.copy_from(a); }).find("(3,)"), std::string::npos);
}

TEST(NDArray, SyncCopiesWaitForTheEngine) {
  NDArray a = make<float>(Shape{1}, {1.0f});
  auto& engine = engine::Engine::get();
  const engine::VarHandle v[] = {a.var()};
  // A pending write is seen by the synchronous read.
  engine.push(
      [a] {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        *a.data_as<float>() = 5.0f;
      },
      a.ctx(), {}, v);
  EXPECT_EQ(a.to_vector<float>()[0], 5.0f);
  // A pending read sees the old value: the synchronous write waits for it.
  std::atomic<float> seen{0.0f};
  engine.push(
      [a, &seen] {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        seen = *a.data_as<float>();
      },
      a.ctx(), v, {});
  const float seven = 7.0f;
  a.sync_copy_from_cpu(&seven, sizeof(float));
  EXPECT_EQ(seen.load(), 5.0f);
  EXPECT_EQ(a.to_vector<float>()[0], 7.0f);
  EXPECT_NE(error_of([&] { a.sync_copy_from_cpu(&seven, 8); }).find("8 bytes"), std::string::npos);
}

TEST(NDArray, MemoryCounterReturnsAfterFree) {
  const int slot = Context::cpu(0).profiler_slot();
  engine::Engine::get().wait_all();
  const uint64_t before = profiler::memory_in_use(slot);
  {
    NDArray a(Shape{1000}, Context::cpu(0));
    NDArray b(Shape{10, 10}, Context::cpu(0), DType::kFloat64);
    EXPECT_GE(profiler::memory_in_use(slot), before + 4000 + 800);
  }
  engine::Engine::get().wait_all();
  EXPECT_EQ(profiler::memory_in_use(slot), before);
}

}  // namespace
}  // namespace nanomx
