// What the GPU memory profile calls each allocation (docs/cuda.md, MXNet's "Attribute Name"):
// the labels that operators, the executor and the profiler scope give the storage layer, and an
// executor's arena described as its blocks. The profile itself records GPU blocks only, so this
// test puts a recording allocator in front of the CPU one and checks what reaches it: every
// path that labels an allocation is device-independent, and runs here without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include "nanomx/engine.h"
#include "nanomx/ops.h"
#include "nanomx/profiler.h"
#include "nanomx/storage.h"
#include "symbol/executor.h"
#include "symbol/gradient_graph.h"
#include "symbol/symbol.h"

namespace nanomx {
namespace {

struct Allocation {
  std::string attribute;
  size_t bytes = 0;
};

// Forwards to the built-in CPU allocator and keeps the attribute of every allocation and every
// arena description it sees.
class RecordingAllocator final : public storage::DeviceAllocator {
 public:
  explicit RecordingAllocator(storage::DeviceAllocator& inner) : inner_(inner) {}

  storage::Block allocate(size_t size, Context ctx) override {
    {
      std::lock_guard lock(mutex_);
      allocations_.push_back(
          {storage::allocation_attribute(storage::current_allocation_label()), size});
    }
    return inner_.allocate(size, ctx);
  }
  void release(storage::Block& block) override { inner_.release(block); }
  void release_pooled() override { inner_.release_pooled(); }
  size_t pooled_bytes() override { return inner_.pooled_bytes(); }
  const char* name() const override { return "recording"; }
  void describe_regions(const storage::Block& block,
                        std::span<const storage::ArenaRegion> regions) override {
    (void)block;
    std::lock_guard lock(mutex_);
    regions_.insert(regions_.end(), regions.begin(), regions.end());
  }

  std::vector<Allocation> allocations() {
    std::lock_guard lock(mutex_);
    return allocations_;
  }
  std::vector<storage::ArenaRegion> regions() {
    std::lock_guard lock(mutex_);
    return regions_;
  }

 private:
  storage::DeviceAllocator& inner_;
  std::mutex mutex_;
  std::vector<Allocation> allocations_;
  std::vector<storage::ArenaRegion> regions_;
};

// Installs a RecordingAllocator for cpu for the test's lifetime; the profiler scope is the
// default at both ends.
class MemoryLabelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    engine::Engine::get().wait_all();
    storage::register_allocator(DeviceType::kCPU, nullptr);
    storage::register_allocator(DeviceType::kCPU, &recording_);
    profiler::set_scope("<unk>:");
  }
  void TearDown() override {
    engine::Engine::get().wait_all();
    storage::register_allocator(DeviceType::kCPU, nullptr);
    storage::register_allocator(DeviceType::kCPU, &cpu_);
    profiler::set_scope("<unk>:");
  }

  // The bytes of every recorded allocation with this attribute, in order.
  std::vector<size_t> sizes_of(const std::string& attribute) {
    std::vector<size_t> sizes;
    for (const Allocation& a : recording_.allocations()) {
      if (a.attribute == attribute) sizes.push_back(a.bytes);
    }
    return sizes;
  }
  std::vector<std::string> attributes() {
    std::vector<std::string> out;
    for (const Allocation& a : recording_.allocations()) out.push_back(a.attribute);
    return out;
  }

  storage::DeviceAllocator& cpu_ = storage::allocator_for(DeviceType::kCPU);
  RecordingAllocator recording_{cpu_};
};

using Sizes = std::vector<size_t>;

TEST_F(MemoryLabelTest, LabelsNestAndFallBackToTheScopeAndUnknown) {
  EXPECT_EQ(storage::allocation_attribute(storage::current_allocation_label()), "<unk>:unknown");
  profiler::set_scope("init:");
  {
    const storage::AllocationLabelScope outer(storage::AllocationLabel{"model:", "in_arg:w"});
    EXPECT_EQ(storage::allocation_attribute(storage::current_allocation_label()), "model:in_arg:w");
    {
      // No scope: the profiler's.
      const storage::AllocationLabelScope inner(storage::AllocationLabel{{}, "_zeros"});
      EXPECT_EQ(storage::allocation_attribute(storage::current_allocation_label()), "init:_zeros");
    }
    EXPECT_EQ(storage::allocation_attribute(storage::current_allocation_label()), "model:in_arg:w");
  }
  EXPECT_EQ(storage::allocation_attribute(storage::current_allocation_label()), "init:unknown");
}

// Operators label their outputs only while memory profiling records (the profile is kept only
// then, and an eager call is too short to pay for the label otherwise).
TEST_F(MemoryLabelTest, ImperativeOutputsAreNamedAfterTheOperatorUnderTheCurrentScope) {
  const std::string trace =
      (std::filesystem::temp_directory_path() / "nanomx_memory_label_test.json").string();
  profiler::set_config({{"profile_memory", "true"}, {"filename", trace}});
  profiler::set_state(profiler::State::kRunning);
  profiler::set_scope("init:");
  NDArray a = ops::invoke_one(ops::get_op("_random_uniform"), {},
                              {{"shape", "(16, 8)"}, {"low", "-1"}, {"high", "1"}});
  profiler::set_scope("<unk>:");
  NDArray b = ops::invoke_one(ops::get_op("_ones"), {}, {{"shape", "(3,)"}});
  NDArray c(Shape{5}, Context::cpu(0), DType::kFloat32);  // made directly: MXNet's default name
  // An operator writing into a given array allocates nothing.
  const NDArray into[] = {b};
  ops::invoke(ops::get_op("_zeros"), {}, {{"shape", "(3,)"}}, into);
  engine::Engine::get().wait_all();

  profiler::set_state(profiler::State::kStopped);
  std::filesystem::remove(trace);
  NDArray unprofiled = ops::invoke_one(ops::get_op("_ones"), {}, {{"shape", "(7,)"}});
  engine::Engine::get().wait_all();

  EXPECT_EQ(sizes_of("init:_random_uniform"), Sizes{16 * 8 * 4});
  EXPECT_EQ(sizes_of("<unk>:unknown"), (Sizes{5 * 4, 7 * 4}))
      << "outside memory profiling an operator leaves its outputs unnamed";
  EXPECT_EQ(sizes_of("<unk>:_ones"), Sizes{3 * 4});
  EXPECT_TRUE(sizes_of("<unk>:_zeros").empty());
}

TEST_F(MemoryLabelTest, NodesRecordTheScopeTheyWereMadeInAndGradientsInheritIt) {
  using symbol::Symbol;
  const Symbol outside = Symbol::variable("x");
  EXPECT_FALSE(outside.outputs[0].node->attrs.contains(symbol::kProfilerScopeAttr))
      << "outside any scope a symbol is as before (and so is its JSON)";
  EXPECT_EQ(symbol::profiler_scope_of(*outside.outputs[0].node), "<unk>:");

  profiler::set_scope("tensordot:");
  const Symbol a = Symbol::variable("A");
  Symbol dot = Symbol::atomic(ops::get_op("dot"), {});
  dot.compose({a, outside}, {}, "dot");
  profiler::set_scope("<unk>:");
  EXPECT_EQ(symbol::profiler_scope_of(*a.outputs[0].node), "tensordot:");
  EXPECT_EQ(symbol::profiler_scope_of(*dot.outputs[0].node), "tensordot:");

  const symbol::GradientGraph gg = symbol::build_gradient_graph(dot, {a.outputs[0]});
  ASSERT_EQ(gg.grads.size(), 1u);
  Symbol grad;
  grad.outputs = {gg.grads[0]};
  bool found = false;
  for (symbol::Node* n : grad.topo_order()) {
    if (n->name == "dot_backward") {
      found = true;
      EXPECT_EQ(symbol::profiler_scope_of(*n), "tensordot:");
    }
  }
  EXPECT_TRUE(found) << "the gradient graph has no dot_backward node";
}

// MXNet's test_gpu_memory_profiler_symbolic, on the CPU: arguments, gradients and the
// executor's planned blocks carry the symbol's scope and MXNet's names.
TEST_F(MemoryLabelTest, ExecutorNamesArgumentsGradientsAndItsBlocks) {
  using symbol::Symbol;
  profiler::set_scope("tensordot:");
  const Symbol a = Symbol::variable("A");
  const Symbol b = Symbol::variable("B");
  Symbol c = Symbol::atomic(ops::get_op("dot"), {});
  c.compose({a, b}, {}, "dot");
  // The activation after it is made outside the scope: its block has the default one.
  profiler::set_scope("<unk>:");
  Symbol act = Symbol::atomic(ops::get_op("Activation"), {{"act_type", "relu"}});
  act.compose({c}, {}, "relu0");

  const int64_t m = 6, k = 5, n = 4;
  // No block sharing, so that each planned block holds one node's output.
  symbol::ExecutorOptions options;
  options.plan.inplace = false;
  options.plan.match_range = 0;
  auto exec =
      symbol::Executor::simple_bind(act, Context::cpu(0), {{"A", Shape{m, k}}, {"B", Shape{k, n}}},
                                    {}, {symbol::GradReq::kWrite, symbol::GradReq::kAdd}, options);
  exec->forward(true);
  const NDArray head[] = {ops::invoke_one(ops::get_op("_ones"), {}, {{"shape", "(6, 4)"}})};
  exec->backward(head);
  engine::Engine::get().wait_all();

  EXPECT_EQ(sizes_of("tensordot:in_arg:A"), Sizes{static_cast<size_t>(m * k * 4)});
  EXPECT_EQ(sizes_of("tensordot:in_arg:B"), Sizes{static_cast<size_t>(k * n * 4)});
  EXPECT_EQ(sizes_of("tensordot:arg_grad:A"), Sizes{static_cast<size_t>(m * k * 4)});
  EXPECT_EQ(sizes_of("tensordot:arg_grad:B"), Sizes{static_cast<size_t>(k * n * 4)});
  EXPECT_EQ(sizes_of("<unk>:head_grad:relu0"), Sizes{static_cast<size_t>(m * n * 4)});
  for (const std::string& attr : attributes()) {
    EXPECT_NE(attr, "<unk>:_zeros") << "bind's zero-filled arrays are named, not the operator";
  }

  // The arena as its blocks: each named after the first node whose output it holds. dot's
  // output, and (B's gradient being added, not written) dot_backward's output for B.
  std::vector<std::string> region_names;
  size_t last_end = 0;
  for (const storage::ArenaRegion& r : recording_.regions()) {
    region_names.push_back(r.attribute);
    EXPECT_GE(r.offset, last_end) << r.attribute << ": regions are sorted and apart";
    last_end = r.offset + r.bytes;
  }
  auto has = [&](const std::string& name) {
    return std::find(region_names.begin(), region_names.end(), name) != region_names.end();
  };
  EXPECT_TRUE(has("tensordot:dot")) << ::testing::PrintToString(region_names);
  EXPECT_TRUE(has("tensordot:dot_backward")) << ::testing::PrintToString(region_names);
  for (const storage::ArenaRegion& r : recording_.regions()) {
    if (r.attribute == "tensordot:dot") {
      EXPECT_GE(r.bytes, static_cast<size_t>(m * n * 4));
    }
  }
}

TEST_F(MemoryLabelTest, ArenaDescriptionsMustBeSortedApartAndInside) {
  auto arena = storage::Arena::create(1024, Context::cpu(0));
  const std::vector<storage::ArenaRegion> good = {{"s:a", 0, 100}, {"s:b", 128, 896}};
  EXPECT_NO_THROW(arena->describe(good));
  const std::vector<storage::ArenaRegion> overlapping = {{"s:a", 0, 200}, {"s:b", 128, 64}};
  try {
    arena->describe(overlapping);
    FAIL() << "overlapping regions were accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("region \"s:b\" [128, 128 + 64) overlaps"),
              std::string::npos)
        << e.what();
  }
  const std::vector<storage::ArenaRegion> outside = {{"s:a", 1000, 100}};
  EXPECT_THROW(arena->describe(outside), Error);
  EXPECT_EQ(recording_.regions().size(), good.size()) << "a refused description reaches nobody";
}

}  // namespace
}  // namespace nanomx
