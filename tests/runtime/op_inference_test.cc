// Operator definitions on shapes and dtypes alone (no NDArray is created here until the invoke
// tests at the end): partial shapes, backward inference, error messages naming the operator
// and the shapes, output counts, in-place pairs; the per-device kernel registry; operators with
// several outputs and any number of inputs.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "nanomx/gpu.h"
#include "nanomx/ops.h"
#include "ops/kernel.h"
#include "ops/op.h"
#include "ops/registry.h"
#include "test_util.h"

namespace nanomx::ops {
namespace {

using test::error_of;
using test::make;
using test::values_of;
constexpr int64_t kU = PartialShape::kUnknownDim;

struct Inferred {
  std::vector<PartialShape> in, out;
  std::vector<PartialDType> in_types, out_types;
};

// Parses attrs and infers output shapes and dtypes of `name` from (partial) inputs.
Inferred infer(const std::string& name, std::vector<PartialShape> in,
               std::vector<PartialDType> in_types = {}, const Attrs& attrs = {},
               std::vector<PartialShape> out = {}) {
  const Op& op = get_op(name);
  const ParsedParams p = parse_attrs(op, attrs, in.size());
  const size_t n_out = static_cast<size_t>(op.outputs_of(p));
  out.resize(n_out);
  if (in_types.empty()) in_types.assign(in.size(), DType::kFloat32);
  std::vector<PartialDType> out_types(n_out);
  infer_shapes(op, p, in, out);
  infer_types(op, p, in_types, out_types);
  return {in, out, in_types, out_types};
}

PartialShape dims(std::initializer_list<int64_t> d) { return Shape(d); }

// ctest runs each test in its own process, so these are the process's first lookups: every
// thread must see the whole table, not the one another thread is still building.
TEST(OpRegistry, FirstLookupsFromManyThreadsSeeTheWholeTable) {
  std::atomic<int> missing{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      while (!go.load()) {
      }
      // Repeated, so that some lookups land while the table is being built.
      for (int i = 0; i < 20000; ++i)
        for (const char* name : {"broadcast_add", "dot", "transpose", "SliceChannel"})
          if (find_op(name) == nullptr) ++missing;
    });
  }
  go = true;
  for (auto& t : threads) t.join();
  EXPECT_EQ(missing.load(), 0);
}

TEST(OpInference, ElementwiseFillsUnknownDimsBothWays) {
  // Unary: what the output knows flows back to the input.
  auto r = infer("negative", {dims({2, kU})}, {}, {}, {dims({kU, 3})});
  EXPECT_EQ(r.in[0], dims({2, 3}));
  EXPECT_EQ(r.out[0], dims({2, 3}));
  r = infer("_plus_scalar", {PartialShape()}, {}, {{"scalar", "1"}});
  EXPECT_FALSE(r.out[0].rank_known());
  r = infer("add_n", {dims({kU, 3}), dims({2, kU}), PartialShape()});
  for (const auto& s : r.in) EXPECT_EQ(s, dims({2, 3}));
  EXPECT_EQ(r.out[0], dims({2, 3}));
  const std::string msg = error_of([] { infer("add_n", {dims({2, 3}), dims({4, 3})}); });
  EXPECT_NE(msg.find("add_n"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(2,3)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(4,3)"), std::string::npos) << msg;
}

TEST(OpInference, BroadcastWithPartialShapes) {
  EXPECT_EQ(infer("broadcast_add", {dims({2, 1}), dims({1, 3})}).out[0], dims({2, 3}));
  EXPECT_EQ(infer("broadcast_mul", {dims({kU, 3}), dims({3})}).out[0], dims({kU, 3}));
  // An unknown against a known d > 1 gives d; against 1 stays unknown.
  EXPECT_EQ(infer("broadcast_sub", {dims({kU, kU}), dims({4, 1})}).out[0], dims({4, kU}));
  EXPECT_FALSE(infer("broadcast_div", {PartialShape(), dims({3})}).out[0].rank_known());
  const std::string msg = error_of([] { infer("broadcast_add", {dims({2, 3}), dims({4, 3})}); });
  EXPECT_NE(msg.find("broadcast_add: shapes of 'lhs' (2,3) and 'rhs' (4,3) cannot be broadcast"),
            std::string::npos)
      << msg;
  const std::string types = error_of([] {
    infer("broadcast_add", {dims({2}), dims({2})}, {DType::kFloat32, DType::kInt32});
  });
  EXPECT_NE(types.find("broadcast_add: 'lhs' has dtype float32 but 'rhs' has int32"),
            std::string::npos)
      << types;
}

TEST(OpInference, LayoutReduceDotIndex) {
  EXPECT_EQ(infer("Reshape", {dims({2, 3, 4})}, {}, {{"shape", "(-1, 0)"}}).out[0], dims({8, 3}));
  EXPECT_EQ(infer("transpose", {dims({2, kU, 4})}).out[0], dims({4, kU, 2}));
  EXPECT_EQ(
      infer("slice", {dims({5, 6})}, {}, {{"begin", "(1, None)"}, {"end", "(4, None)"}}).out[0],
      dims({3, 6}));
  EXPECT_EQ(infer("sum", {dims({kU, 3, 4})}, {}, {{"axis", "1"}}).out[0], dims({kU, 4}));
  EXPECT_EQ(infer("sum", {dims({2, 3})}).out[0], dims({1}));
  EXPECT_EQ(infer("max", {dims({2, 3})}, {}, {{"axis", "0"}, {"keepdims", "True"}}).out[0],
            dims({1, 3}));
  EXPECT_EQ(infer("dot", {dims({2, 3}), dims({3, 5})}).out[0], dims({2, 5}));
  EXPECT_EQ(infer("dot", {dims({3, 2}), dims({5, 3})}, {},
                  {{"transpose_a", "True"}, {"transpose_b", "True"}})
                .out[0],
            dims({2, 5}));
  EXPECT_FALSE(infer("dot", {dims({2, kU}), dims({3, 5})}).out[0].rank_known());
  std::string msg = error_of([] { infer("dot", {dims({2, 3}), dims({4, 3})}); });
  EXPECT_NE(msg.find("dot: shapes of 'lhs' (2,3) and 'rhs' (4,3)"), std::string::npos) << msg;
  // pick's output keeps data's dtype whatever the index's.
  auto r = infer("pick", {dims({4, 5}), dims({4})}, {DType::kFloat64, DType::kInt32});
  EXPECT_EQ(r.out[0], dims({4}));
  EXPECT_EQ(r.out_types[0], DType::kFloat64);
  msg = error_of([] { infer("Reshape", {dims({2, 3})}, {}, {{"shape", "(4, 2)"}}); });
  EXPECT_NE(msg.find("Reshape"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(2,3)"), std::string::npos) << msg;
}

TEST(OpInference, CastFillsAndRandomWithoutInputs) {
  EXPECT_EQ(infer("Cast", {dims({2})}, {DType::kFloat32}, {{"dtype", "int64"}}).out_types[0],
            DType::kInt64);
  auto r = infer("_zeros", {}, {}, {{"shape", "(2, 3)"}, {"dtype", "float16"}});
  EXPECT_EQ(r.out[0], dims({2, 3}));
  EXPECT_EQ(r.out_types[0], DType::kFloat16);
  EXPECT_EQ(infer("_random_uniform", {}, {}, {{"shape", "(4,)"}}).out_types[0], DType::kFloat32);
  const Op& uniform = get_op("_random_uniform");
  EXPECT_TRUE(static_cast<bool>(uniform.state_var));
  EXPECT_FALSE(uniform.backward.differentiable);
  const std::string msg = error_of([] { infer("_ones", {}); });
  EXPECT_NE(msg.find("_ones: required attribute 'shape' is missing"), std::string::npos) << msg;
}

TEST(OpInference, SliceChannelOutputsAndErrors) {
  auto r = infer("SliceChannel", {dims({2, 6, kU})}, {}, {{"num_outputs", "3"}});
  ASSERT_EQ(r.out.size(), 3u);
  for (const auto& s : r.out) EXPECT_EQ(s, dims({2, 2, kU}));
  for (const auto& t : r.out_types) EXPECT_EQ(t, DType::kFloat32);
  r = infer("split", {dims({3, 4})}, {},
            {{"num_outputs", "3"}, {"axis", "0"}, {"squeeze_axis", "1"}});
  EXPECT_EQ(r.out[2], dims({4}));
  const Op& split = get_op("split");
  const ParsedParams p = parse_attrs(split, {{"num_outputs", "2"}}, 1);
  EXPECT_EQ(split.outputs_of(p), 2);
  EXPECT_EQ(split.output_names_of(p), (std::vector<std::string>{"output0", "output1"}));
  std::string msg = error_of([] { infer("split", {dims({2, 3})}, {}, {{"num_outputs", "2"}}); });
  EXPECT_NE(msg.find("(2,3)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("2 does not evenly divide 3"), std::string::npos) << msg;
  msg = error_of([] { infer("split", {dims({2})}, {}, {{"num_outputs", "0"}}); });
  EXPECT_NE(msg.find("num_outputs"), std::string::npos) << msg;
}

TEST(OpInference, DefinitionsDeclareInPlaceAndBackwardNeeds) {
  EXPECT_TRUE(get_op("broadcast_add").may_share(0, 0));
  EXPECT_TRUE(get_op("broadcast_add").may_share(1, 0));
  EXPECT_TRUE(get_op("_plus_scalar").may_share(0, 0));
  EXPECT_TRUE(get_op("_slice_assign").may_share(0, 0));
  EXPECT_FALSE(get_op("_slice_assign").may_share(1, 0));
  EXPECT_TRUE(get_op("_onehot_encode").may_share(1, 0));
  EXPECT_FALSE(get_op("dot").may_share(0, 0));
  EXPECT_EQ(get_op("dot").backward.inputs, (std::vector<int>{0, 1}));
  EXPECT_EQ(get_op("sqrt").backward.outputs, (std::vector<int>{0}));
  EXPECT_TRUE(get_op("add_n").variadic());
  EXPECT_EQ(get_op("ElementWiseSum").num_inputs_key, "num_args");
  // Every operator parses its defaults and has one output unless it says otherwise.
  for (const std::string& name : list_op_names()) {
    const Op& op = get_op(name);
    EXPECT_TRUE(static_cast<bool>(op.infer_shape)) << name;
    // Custom operators run their bodies elsewhere (run_async) and have no kernels.
    if (!op.run_async) {
      EXPECT_NE(find_kernel(op, DeviceType::kCPU), nullptr) << name;
    }
  }
}

TEST(OpInference, CountsAreChecked) {
  const Op& op = get_op("negative");
  const ParsedParams p = parse_attrs(op, {}, 2);
  std::vector<PartialShape> in(2), out(1);
  const std::string msg = error_of([&] { infer_shapes(op, p, in, out); });
  EXPECT_NE(msg.find("negative: expected 1 input(s), got 2"), std::string::npos) << msg;
}

TEST(KernelRegistry, MissingDeviceKernelNamesOpAndDevice) {
  if (nanomx::num_gpus() > 0) GTEST_SKIP() << "a GPU is visible: gpu has its CUDA kernels";
  const std::string msg = error_of([] { get_kernel(get_op("dot"), DeviceType::kGPU); });
  EXPECT_NE(msg.find("dot: no kernel for device gpu (registered: cpu)"), std::string::npos) << msg;
  // cpu_pinned and cpu_shared arrays run cpu's kernels.
  EXPECT_EQ(find_kernel(get_op("dot"), DeviceType::kCPUPinned),
            find_kernel(get_op("dot"), DeviceType::kCPU));
  EXPECT_NE(error_of([] {
              register_kernel("no_such_op", DeviceType::kGPU, {});
            }).find("unknown operator 'no_such_op'"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              register_kernel(
                  "dot", DeviceType::kCPU,
                  [](const ParsedParams&, std::span<const NDArray>, std::span<const NDArray>) {});
            }).find("already has a cpu kernel"),
            std::string::npos);
}

TEST(KernelRegistry, ASecondDeviceKernelLeavesTheDefinitionAlone) {
  if (nanomx::num_gpus() > 0) GTEST_SKIP() << "a GPU is visible: gpu has its CUDA kernels";
  const Op& op = get_op("square");
  const auto before = infer("square", {dims({2, kU})});
  const auto inplace = op.inplace;
  const Kernel* cpu = find_kernel(op, DeviceType::kCPU);
  ASSERT_EQ(find_kernel(op, DeviceType::kGPU), nullptr);
  int calls = 0;
  register_kernel("square", DeviceType::kGPU,
                  [&calls](const ParsedParams&, std::span<const NDArray>,
                           std::span<const NDArray>) { ++calls; });
  ASSERT_NE(find_kernel(op, DeviceType::kGPU), nullptr);
  (*find_kernel(op, DeviceType::kGPU))(ParsedParams(&op.name), {}, {});
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(find_kernel(op, DeviceType::kCPU), cpu);
  EXPECT_EQ(&get_op("square"), &op);
  EXPECT_EQ(op.inplace, inplace);
  const auto after = infer("square", {dims({2, kU})});
  EXPECT_EQ(after.out[0], before.out[0]);
  // The CPU path is unchanged.
  EXPECT_EQ(
      values_of<float>(invoke_one(op, std::vector<NDArray>{make<float>(Shape{2}, {3, 4})}, {})),
      (std::vector<float>{9, 16}));
}

TEST(ParsedParams, InlineAndHeapCopiesMoves) {
  const std::string name = "op";
  ParsedParams small(&name);
  small.emplace<int>(7);
  ParsedParams big(&name);
  big.emplace<std::vector<double>>(std::vector<double>(3, 1.5));
  struct Huge {
    char bytes[512] = {};
    int tag = 5;
  };
  ParsedParams huge(&name);
  huge.emplace<Huge>(Huge{});
  ParsedParams a = small, b = big, c = huge;
  ParsedParams d = std::move(c);
  EXPECT_EQ(a.get<int>(), 7);
  EXPECT_EQ(b.get<std::vector<double>>().size(), 3u);
  EXPECT_EQ(d.get<Huge>().tag, 5);
  EXPECT_TRUE(c.empty());  // NOLINT: moved-from is empty by contract
  const std::string msg = error_of([&] { a.get<double>(); });
  EXPECT_NE(msg.find("op: internal error"), std::string::npos) << msg;
}

TEST(SmallVector, InlineThenHeap) {
  SmallVector<std::string, 2> v;
  for (int i = 0; i < 5; ++i) v.push_back(std::to_string(i));
  EXPECT_EQ(v.size(), 5u);
  SmallVector<std::string, 2> w = v, x = std::move(v);
  EXPECT_EQ(w[4], "4");
  EXPECT_EQ(x[0], "0");
  w.resize(1);
  EXPECT_EQ(w.size(), 1u);
  SmallVector<std::string, 4> small(2);
  small[1] = "b";
  SmallVector<std::string, 4> moved = std::move(small);
  EXPECT_EQ(moved[1], "b");
}

// ---- invoke with several outputs and any number of inputs ----------------------------------

TEST(MultiOutputInvoke, SliceChannelReturnsEveryOutput) {
  const NDArray x = make<float>(Shape{2, 4}, {0, 1, 2, 3, 4, 5, 6, 7});
  auto parts = invoke("SliceChannel", std::vector<NDArray>{x}, {{"num_outputs", "2"}});
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(values_of<float>(parts[0]), (std::vector<float>{0, 1, 4, 5}));
  EXPECT_EQ(values_of<float>(parts[1]), (std::vector<float>{2, 3, 6, 7}));
  // Into given outputs.
  const std::vector<NDArray> outs = {NDArray(Shape{2, 2}, Context::cpu(0)),
                                     NDArray(Shape{2, 2}, Context::cpu(0))};
  auto same = invoke("split", std::vector<NDArray>{x}, {{"num_outputs", "2"}}, outs);
  EXPECT_EQ(same[1].data(), outs[1].data());
  EXPECT_EQ(values_of<float>(outs[1]), (std::vector<float>{2, 3, 6, 7}));
  const std::string msg = error_of([&] {
    invoke("split", std::vector<NDArray>{x}, {{"num_outputs", "2"}}, std::vector<NDArray>{outs[0]});
  });
  EXPECT_NE(msg.find("expected 2 output array(s)"), std::string::npos) << msg;
  const std::string one = error_of([&] {
    invoke_one(get_op("split"), std::vector<NDArray>{x}, {{"num_outputs", "2"}});
  });
  EXPECT_NE(one.find("SliceChannel: the operator has 2 outputs"), std::string::npos) << one;
}

TEST(MultiOutputInvoke, AddNWithManyInputsAndAliasing) {
  std::vector<NDArray> in;
  std::vector<float> want(3, 0.0f);
  for (int i = 0; i < 7; ++i) {  // more than the inline lists hold
    in.push_back(make<float>(Shape{3}, {float(i), float(2 * i), 1}));
    want[0] += float(i);
    want[1] += float(2 * i);
    want[2] += 1;
  }
  EXPECT_EQ(values_of<float>(invoke("add_n", in)[0]), want);
  EXPECT_EQ(values_of<float>(invoke("ElementWiseSum", in, {{"num_args", "7"}})[0]), want);
  EXPECT_NE(error_of([&] {
              invoke("add_n", in, {{"num_args", "3"}});
            }).find("add_n: attribute 'num_args' = 3 but 7 input(s) given"),
            std::string::npos);
  EXPECT_NE(error_of([] { invoke("add_n", std::vector<NDArray>{}); }).find("at least 1"),
            std::string::npos);
  // Writing into a later input (not declared in place) goes through a temporary.
  const NDArray a = make<float>(Shape{2}, {1, 2}), b = make<float>(Shape{2}, {10, 20});
  const std::vector<NDArray> ab = {a, b, a}, into_b = {b};
  invoke("add_n", ab, {}, into_b);
  EXPECT_EQ(values_of<float>(b), (std::vector<float>{12, 24}));
  // Into the first input, in place.
  const std::vector<NDArray> into_a = {a};
  invoke("add_n", std::vector<NDArray>{a, a}, {}, into_a);
  EXPECT_EQ(values_of<float>(a), (std::vector<float>{2, 4}));
}

// ---- the eager shortcut on known shapes ------------------------------------------------------

// Attributes an operator with required ones can be parsed with.
ParsedParams parse_some(const Op& op, size_t num_inputs) {
  for (const Attrs& attrs : {Attrs{}, Attrs{{"scalar", "2"}}, Attrs{{"a_min", "0"}, {"a_max", "1"}},
                             Attrs{{"dtype", "float16"}}, Attrs{{"lr", "0.1"}},
                             Attrs{{"kernel", "(1,)"}}, Attrs{{"nsize", "1"}}}) {
    try {
      return parse_attrs(op, attrs, num_inputs);
    } catch (const Error&) {
    }
  }
  ADD_FAILURE() << op.name << ": no attribute set parses";
  return ParsedParams(&op.name);
}

TEST(KnownShapeInference, AgreesWithPartialInferenceForEveryOperatorThatHasIt) {
  const std::vector<std::vector<Shape>> cases = {{Shape{2, 3}},
                                                 {Shape{}},
                                                 {Shape{0, 4}},
                                                 {Shape{2, 3}, Shape{2, 3}},
                                                 {Shape{2, 1, 3}, Shape{4, 3}},
                                                 {Shape{5}, Shape{}},
                                                 {Shape{2, 3}, Shape{4, 3}},
                                                 {Shape{1, 2, 3, 4, 5, 6, 7, 8}, Shape{8}},
                                                 {Shape{1, 2, 3, 4, 5, 6, 7, 8}, Shape{2, 1, 1}},
                                                 {Shape{3}, Shape{3}, Shape{3}},
                                                 {Shape{3}, Shape{3}, Shape{4}}};
  int with_shortcut = 0, decided = 0, declined = 0;
  for (const std::string& name : list_op_names()) {
    const Op& op = get_op(name);
    if (op.infer_shape_known == nullptr) continue;
    ++with_shortcut;
    for (const std::vector<Shape>& in : cases) {
      if (op.variadic() ? in.empty() : in.size() != op.inputs.size()) continue;
      const ParsedParams p = parse_some(op, in.size());
      const size_t n_out = static_cast<size_t>(op.outputs_of(p));
      std::vector<const Shape*> ptrs;
      for (const Shape& s : in) ptrs.push_back(&s);
      std::vector<Shape> known(n_out);
      std::vector<PartialShape> partial_in(in.begin(), in.end()), partial_out(n_out);
      if (infer_known_shapes(op, p, ptrs, known)) {
        ++decided;
        infer_shapes(op, p, partial_in, partial_out);
        for (size_t j = 0; j < n_out; ++j) {
          EXPECT_EQ(PartialShape(known[j]), partial_out[j]) << name << " " << shape_list(in);
        }
      } else {
        // Declining is for inputs the general inference rejects (and names in its message).
        ++declined;
        const std::string msg = error_of([&] { infer_shapes(op, p, partial_in, partial_out); });
        EXPECT_NE(msg.find(op.name), std::string::npos) << name << " " << shape_list(in);
      }
    }
  }
  // The eager path's common operators take the shortcut.
  for (const char* name : {"broadcast_add", "broadcast_mul", "_plus_scalar", "_rdiv_scalar",
                           "negative", "clip", "add_n"}) {
    EXPECT_NE(get_op(name).infer_shape_known, nullptr) << name;
  }
  EXPECT_GT(with_shortcut, 10);
  EXPECT_GT(decided, 20);
  EXPECT_GT(declined, 3);
  // An operator without a shortcut declines, after the same count checks as infer_shapes.
  const Op& dot = get_op("dot");
  const ParsedParams p = parse_attrs(dot, {}, 2);
  const Shape a{2, 3}, b{3, 4};
  std::vector<const Shape*> ptrs = {&a, &b};
  std::vector<Shape> out(1);
  EXPECT_FALSE(infer_known_shapes(dot, p, ptrs, out));
  ptrs.pop_back();
  EXPECT_NE(error_of([&] { infer_known_shapes(dot, p, ptrs, out); }).find("dot: expected 2"),
            std::string::npos);
}

TEST(KnownShapeInference, BroadcastKnown) {
  Shape out;
  ASSERT_TRUE(broadcast_known(Shape{2, 1, 3}, Shape{4, 3}, out));
  EXPECT_EQ(out, (Shape{2, 4, 3}));
  ASSERT_TRUE(broadcast_known(Shape{}, Shape{5}, out));
  EXPECT_EQ(out, (Shape{5}));
  ASSERT_TRUE(broadcast_known(Shape{0, 1}, Shape{1, 7}, out));
  EXPECT_EQ(out, (Shape{0, 7}));
  // More dimensions than a shape keeps inline.
  ASSERT_TRUE(broadcast_known(Shape{2, 1, 1, 1, 1, 1, 1, 9}, Shape{3, 1}, out));
  EXPECT_EQ(out, (Shape{2, 1, 1, 1, 1, 1, 3, 9}));
  EXPECT_FALSE(broadcast_known(Shape{2, 3}, Shape{4, 3}, out));
}

// The eager call takes the shortcut where it can; where inputs or given outputs disagree, the
// messages are the general inference's, as before the shortcut existed.
TEST(KnownShapeInference, EagerMessagesAreTheGeneralOnes) {
  const NDArray a = make<float>(Shape{2, 3}, {1, 2, 3, 4, 5, 6});
  const NDArray b = make<float>(Shape{4, 3}, std::vector<float>(12, 1));
  const NDArray row = make<float>(Shape{3}, {10, 20, 30});
  EXPECT_EQ(values_of<float>(invoke("broadcast_add", std::vector<NDArray>{a, row})[0]),
            (std::vector<float>{11, 22, 33, 14, 25, 36}));
  std::string msg = error_of([&] { invoke("broadcast_add", std::vector<NDArray>{a, b}); });
  EXPECT_NE(msg.find("broadcast_add: shapes of 'lhs' (2,3) and 'rhs' (4,3) cannot be broadcast"),
            std::string::npos)
      << msg;
  const NDArray i = make<int32_t>(Shape{2, 3}, {1, 2, 3, 4, 5, 6});
  msg = error_of([&] { invoke("broadcast_add", std::vector<NDArray>{a, i}); });
  EXPECT_NE(msg.find("broadcast_add: 'lhs' has dtype float32 but 'rhs' has int32"),
            std::string::npos)
      << msg;
  // A given output of another shape: the elementwise rule names it as a constraint...
  const std::vector<NDArray> wrong = {NDArray(Shape{3, 2}, Context::cpu(0))};
  msg = error_of([&] { invoke("negative", std::vector<NDArray>{a}, {}, wrong); });
  EXPECT_NE(msg.find("negative: shapes of 'data' (2,3) and the output (3,2) differ"),
            std::string::npos)
      << msg;
  // ...broadcasting overwrites it, and the check of given outputs names both.
  msg = error_of([&] { invoke("broadcast_add", std::vector<NDArray>{a, row}, {}, wrong); });
  EXPECT_NE(msg.find("broadcast_add: output array has shape (3,2) and dtype float32, expected "
                     "shape (2,3) and dtype float32 (inputs: (2,3), (3,))"),
            std::string::npos)
      << msg;
  const std::vector<NDArray> wrong_type = {NDArray(Shape{2, 3}, Context::cpu(0), DType::kInt32)};
  msg = error_of([&] { invoke("negative", std::vector<NDArray>{a}, {}, wrong_type); });
  EXPECT_NE(msg.find("negative: 'data' has dtype float32 but the output has int32"),
            std::string::npos)
      << msg;
  // A given output that fits takes the shortcut and receives the result.
  const std::vector<NDArray> fits = {NDArray(Shape{2, 3}, Context::cpu(0))};
  invoke("_plus_scalar", std::vector<NDArray>{a}, {{"scalar", "1"}}, fits);
  EXPECT_EQ(values_of<float>(fits[0]), (std::vector<float>{2, 3, 4, 5, 6, 7}));
}

TEST(SmallVector, PushBackOfItsOwnElementWhileGrowing) {
  SmallVector<std::string, 2> v;
  v.push_back(std::string(40, 'a'));  // longer than the inline string buffer
  v.push_back(std::string(40, 'b'));
  v.push_back(v[0]);  // grows: the copy is made before the old buffer goes
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[2], std::string(40, 'a'));
  std::string moved(40, 'c');
  v.push_back(std::move(moved));
  EXPECT_EQ(v[3], std::string(40, 'c'));
}

// Floats in attributes read through from_chars where it applies: the same values as strtod,
// bit for bit, and the same forms accepted and rejected.
TEST(AttributeParsing, FloatsAsStrtodReadsThem) {
  const Op& op = get_op("_plus_scalar");
  for (const char* text : {"1.0",
                           "-0.5",
                           "0",
                           "-0",
                           "1e-08",
                           "3.141592653589793",
                           "0.1",
                           "1e308",
                           "4.9e-324",
                           "2.2250738585072014e-308",
                           "1e400",
                           "-1e-400",
                           " 2.5 ",
                           "+1.5",
                           "0x1p3",
                           ".5",
                           "5.",
                           "1E5",
                           "inf",
                           "-inf",
                           "+inf",
                           "Infinity",
                           "123456789012345678901234567890"}) {
    const Attrs attrs = {{"scalar", text}};
    const Params p(op, attrs);
    const double got = p.get_float("scalar");
    const double want = std::strtod(text, nullptr);
    EXPECT_EQ(std::memcmp(&got, &want, sizeof(double)), 0) << text << ": " << got << " vs " << want;
  }
  EXPECT_TRUE(std::isnan(Params(op, {{"scalar", "nan"}}).get_float("scalar")));
  for (const char* bad : {"", "  ", "1.0x", "abc", "1,5", "--1"}) {
    const std::string msg = error_of([&] { Params(op, {{"scalar", bad}}).get_float("scalar"); });
    EXPECT_NE(msg.find("is not a number"), std::string::npos) << bad << ": " << msg;
  }
}

}  // namespace
}  // namespace nanomx::ops
