// The handle tables behind the C API (src/c_api/handle_table.h): the generic template on its own
// (any future handle kind reuses it), and NDArray / profiler handles created and freed from many
// threads at once (run under ThreadSanitizer in CI: label `concurrency`).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "c_api/handle_table.h"
#include "nanomx/c_api.h"
#include "nanomx/c_api_ndarray.h"
#include "nanomx/error.h"

namespace {

using nanomx::c_api::HandleKind;
using nanomx::c_api::HandleTable;

std::string error_of(auto&& call) {
  try {
    call();
  } catch (const nanomx::Error& e) {
    return e.what();
  }
  return "";
}

// A kind with no C functions yet (symbols) uses the same template unchanged.
TEST(HandleTable, GenericTableRefusesStaleMadeUpAndOtherKindHandles) {
  HandleTable<std::string, HandleKind::kSymbol> symbols;
  HandleTable<int, HandleKind::kKVStore> stores;
  void* a = symbols.emplace("a");
  EXPECT_EQ(symbols.get(a, "F", "sym"), "a");
  EXPECT_EQ(symbols.release(a, "F", "sym"), "a");
  void* b = symbols.emplace("b");  // takes the slot `a` had, with a new generation
  EXPECT_NE(a, b);
  EXPECT_EQ(symbols.find(a), nullptr);
  EXPECT_EQ(
      error_of([&] { symbols.get(a, "MXSymbolFree", "symbol"); }),
      "MXSymbolFree: symbol is a stale or unknown symbol handle " +
          [&] {
            char hex[32];
            std::snprintf(hex, sizeof hex, "0x%016llx",
                          static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(a)));
            return std::string(hex);
          }() +
          " (it was freed or destroyed already)");
  EXPECT_NE(error_of([&] { symbols.release(a, "F", "sym"); }).find("freed or destroyed"),
            std::string::npos);
  void* store = stores.emplace(7);
  EXPECT_NE(error_of([&] {
              symbols.get(store, "F", "sym");
            }).find("(it is a KVStore handle, not a symbol handle)"),
            std::string::npos);
  int local = 0;
  EXPECT_NE(error_of([&] { symbols.get(&local, "F", "sym"); }).find("never given out"),
            std::string::npos);
  // Same kind byte, a slot never handed out, or a generation from the future: never given out.
  void* future = nanomx::c_api::handle_bits::make(HandleKind::kSymbol, 1000, 0);
  EXPECT_NE(error_of([&] { symbols.get(future, "F", "sym"); }).find("never given out"),
            std::string::npos);
  EXPECT_EQ(symbols.get(b, "F", "sym"), "b");
}

TEST(HandleTable, ManyCreateFreeCyclesNeverRepeatAValue) {
  HandleTable<int, HandleKind::kExecutor> table;
  std::set<void*> seen;
  for (int i = 0; i < 100000; ++i) {
    void* h = table.emplace(i);
    ASSERT_TRUE(seen.insert(h).second) << i;
    ASSERT_EQ(table.release(h, "F", "h"), i);
  }
}

TEST(HandleTable, ConstructorThatThrowsLeavesNoHandle) {
  struct Throws {
    explicit Throws(bool t) {
      if (t) throw nanomx::Error("no");
    }
  };
  HandleTable<Throws, HandleKind::kDataIter> table;
  EXPECT_THROW(table.emplace(true), nanomx::Error);
  void* h = table.emplace(false);
  EXPECT_NE(table.find(h), nullptr);
}

// Threads create, use and free arrays at once; each sees only its own arrays, every double free
// is refused, and no freed handle is accepted again. Together they hold more arrays than one
// block of slots, so lookups run while other threads add blocks.
TEST(CApiHandlesConcurrency, ArraysCreatedAndFreedFromManyThreads) {
  constexpr int kThreads = 4;
  constexpr int kArrays = 1500;  // 4 x 1500 live at the peak > 4096 slots per block
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &failures] {
      std::vector<NDArrayHandle> live;
      auto check = [&](NDArrayHandle h, int r) {
        int ndim = 0;
        const int64_t* dims = nullptr;
        if (MXNDArrayGetShapeEx64(h, &ndim, &dims) != 0 || ndim != 2 || dims[0] != t + 1 ||
            dims[1] != r % 5 + 1)
          ++failures;
      };
      for (int r = 0; r < kArrays; ++r) {
        const mx_uint shape[] = {static_cast<mx_uint>(t + 1), static_cast<mx_uint>(r % 5 + 1)};
        NDArrayHandle h = nullptr;
        if (MXNDArrayCreateEx(shape, 2, 1, 0, 0, 0, &h) != 0) ++failures;
        live.push_back(h);
        check(live[static_cast<size_t>(r / 2)], r / 2);
      }
      for (int r = 0; r < kArrays; ++r) {
        check(live[static_cast<size_t>(r)], r);
        if (MXNDArrayFree(live[static_cast<size_t>(r)]) != 0) ++failures;
        if (MXNDArrayFree(live[static_cast<size_t>(r)]) != -1) ++failures;  // double free
      }
      int dtype = 0;
      for (NDArrayHandle h : live) {
        if (MXNDArrayGetDType(h, &dtype) != -1) ++failures;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(MXNDArrayWaitAll(), 0);
}

TEST(CApiHandlesConcurrency, ProfilerObjectsCreatedAndDestroyedFromManyThreads) {
  ProfileHandle domain = nullptr;
  ASSERT_EQ(MXProfileCreateDomain("threads", &domain), 0);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int r = 0; r < 300; ++r) {
        ProfileHandle task = nullptr, counter = nullptr;
        if (MXProfileCreateTask(domain, "t", &task) != 0) ++failures;
        if (MXProfileCreateCounter(domain, "c", &counter) != 0) ++failures;
        if (MXProfileDurationStart(task) != 0 || MXProfileDurationStop(task) != 0) ++failures;
        if (MXProfileSetCounter(counter, 3) != 0) ++failures;
        if (MXProfileDestroyHandle(task) != 0 || MXProfileDestroyHandle(counter) != 0) ++failures;
        if (MXProfileDestroyHandle(task) != -1) ++failures;
        if (MXProfileSetCounter(counter, 1) != -1) ++failures;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
}

}  // namespace
