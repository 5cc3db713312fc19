// A test-only device backend, registered the way src/backends/<name>/ registers (docs/runtime.md,
// "Adding a backend"): a fake device type backed by host memory, with its own allocator, worker
// pool and one kernel. Nothing below the backends knows about it, yet arrays live on it, copies
// reach it, and an operator runs on it, on its own worker.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "base/backend.h"
#include "engine/device_workers.h"
#include "nanomx/engine.h"
#include "nanomx/error.h"
#include "nanomx/ndarray.h"
#include "nanomx/ops.h"
#include "nanomx/storage.h"
#include "ops/kernel.h"

namespace nanomx {
namespace {

// No device type code of MXNet's (1, 2, 3, 5).
constexpr auto kFake = static_cast<DeviceType>(7);

std::atomic<int> g_allocations{0};
std::atomic<int> g_copies{0};
std::atomic<int> g_kernel_runs{0};
std::atomic<int> g_device_completions{0};
std::thread::id g_kernel_thread;

class FakeAllocator final : public storage::DeviceAllocator {
 public:
  storage::Block allocate(size_t size, Context ctx) override {
    storage::Block block;
    block.ctx = ctx;
    block.size = block.capacity = size;
    if (size == 0) return block;
    block.data =
        std::aligned_alloc(storage::kAlignment, (size + storage::kAlignment - 1) /
                                                    storage::kAlignment * storage::kAlignment);
    ++g_allocations;
    return block;
  }
  void release(storage::Block& block) override {
    std::free(block.data);
    block.data = nullptr;
  }
  void release_pooled() override {}
  size_t pooled_bytes() override { return 0; }
  const char* name() const override { return "fake"; }
};

// Completes each operation as soon as its function returns (a real device would wait for its
// queue), through the engine's FinishFn, as a GPU pool's completer does.
class FakePool final : public engine::DevicePool {
 public:
  explicit FakePool(engine::FinishFn finish) : finish_(std::move(finish)) {}
  std::function<void()> start_worker() override {
    return [] {};
  }
  void execute(engine::OprBlock& op, FunctionRef<engine::ErrorRef(bool& new_error)> run) override {
    bool new_error = false;
    engine::ErrorRef error = run(new_error);
    ++g_device_completions;
    finish_(&op, std::move(error), new_error, nullptr);
  }

 private:
  engine::FinishFn finish_;
};

class FakeWorkers final : public engine::DeviceWorkers {
 public:
  int threads(bool) const override { return 1; }
  std::unique_ptr<engine::DevicePool> make_pool(const std::string&, int,
                                                engine::FinishFn finish) override {
    return std::make_unique<FakePool>(std::move(finish));
  }
};

void register_fake_kernels() {
  ops::register_kernel(
      "_plus", kFake,
      [](const ops::ParsedParams&, std::span<const NDArray> in, std::span<const NDArray> out) {
        ++g_kernel_runs;
        g_kernel_thread = std::this_thread::get_id();
        const float* a = in[0].data_as<float>();
        const float* b = in[1].data_as<float>();
        float* c = out[0].data_as<float>();
        for (int64_t i = 0; i < out[0].size(); ++i) c[i] = a[i] + b[i];
      });
}

// The fake backend's registration, as a backend's register_<name>_backend() does; runs at load,
// after the build's own backends (their constructor has priority 101).
__attribute__((constructor(102))) void register_fake_backend() {
  static const DeviceBackend backend = [] {
    DeviceBackend b;
    b.name = "fake";
    b.type = kFake;
    b.device_name = "fake";
    b.device_count = [] { return 1; };
    b.unavailable_reason = [] { return std::string(); };
    b.copy = [](void* dst, Context, const void* src, Context, size_t bytes) {
      ++g_copies;
      std::memcpy(dst, src, bytes);
    };
    return b;
  }();
  static FakeAllocator allocator;
  static FakeWorkers workers;
  register_device_backend(&backend);
  storage::register_allocator_provider(
      [](storage::AllocatorInstall install) { install(kFake, &allocator); });
  engine::register_device_workers(kFake, &workers);
  ops::register_kernel_provider(kFake, register_fake_kernels);
}

TEST(FakeBackend, NamedFromItsRegistration) {
  EXPECT_EQ((Context{kFake, 0}.str()), "fake(0)");
  EXPECT_EQ(device_backend(kFake)->name, std::string("fake"));
  EXPECT_FALSE((Context{kFake, 0}.is_cpu()));
}

TEST(FakeBackend, RunsAnOperatorOnItsOwnWorker) {
  const Context fake{kFake, 0};
  const int allocations = g_allocations.load(), copies = g_copies.load();
  const int completions = g_device_completions.load();
  NDArray a(Shape{4}, fake), b(Shape{4}, fake);
  EXPECT_EQ(g_allocations.load(), allocations + 2);
  const std::vector<float> x = {1, 2, 3, 4}, y = {10, 20, 30, 40};
  a.sync_copy_from_cpu(x.data(), a.nbytes());
  b.sync_copy_from_cpu(y.data(), b.nbytes());
  EXPECT_EQ(g_copies.load(), copies + 2);

  const NDArray inputs[] = {a, b};
  const NDArray c = ops::invoke("_plus", inputs).at(0);
  EXPECT_EQ(c.ctx(), fake);
  EXPECT_EQ(c.to_vector<float>(), (std::vector<float>{11, 22, 33, 44}));
  EXPECT_EQ(g_kernel_runs.load(), 1);
  EXPECT_NE(g_kernel_thread, std::this_thread::get_id());  // its pool's worker ran it
  EXPECT_GE(g_device_completions.load(), completions + 1);

  // Copies between the fake device and the host go through the backend's copy routine.
  const NDArray host = c.copy_to(Context::cpu(0));
  EXPECT_EQ(host.to_vector<float>(), (std::vector<float>{11, 22, 33, 44}));
}

TEST(FakeBackend, AnOperatorWithoutItsKernelIsRefusedNamingTheDevice) {
  const Context fake{kFake, 0};
  NDArray a(Shape{2}, fake);
  const NDArray inputs[] = {a, a};
  try {
    ops::invoke("_mul", inputs);
    FAIL() << "_mul has no kernel on the fake device";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no kernel for device fake"), std::string::npos)
        << e.what();
  }
}

TEST(FakeBackend, ASecondBackendForOneDeviceTypeIsRefused) {
  static DeviceBackend again;
  again.name = "again";
  again.type = kFake;
  again.device_count = [] { return 1; };
  again.unavailable_reason = [] { return std::string(); };
  EXPECT_THROW(register_device_backend(&again), Error);
}

}  // namespace
}  // namespace nanomx
