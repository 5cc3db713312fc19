// The symbolic executor: the memory planner on hand-made graphs, the gradient graph's nodes,
// bind / forward / backward against hand-computed values and float64 central differences,
// grad_req write / add / null, sharing on and off and mirroring giving identical results,
// debug_str's trailing lines, and the executor's C API.
#include "symbol/executor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "nanomx/c_api.h"
#include "nanomx/ops.h"
#include "ops/gradient.h"
#include "symbol/gradient_graph.h"
#include "symbol/plan_memory.h"

namespace nanomx::symbol {
namespace {

Symbol op(const std::string& name, const std::vector<Symbol>& args, const Kwargs& attrs,
          const std::string& node_name) {
  Symbol s = Symbol::atomic(ops::get_op(name), attrs);
  s.compose(args, {}, node_name);
  return s;
}

NDArray array(const Shape& shape, const std::vector<double>& values,
              DType dtype = DType::kFloat32) {
  NDArray a(shape, Context::cpu(0), dtype);
  if (dtype == DType::kFloat64) {
    a.sync_copy_from_cpu(values.data(), values.size() * sizeof(double));
  } else {
    std::vector<float> f(values.begin(), values.end());
    a.sync_copy_from_cpu(f.data(), f.size() * sizeof(float));
  }
  return a;
}

std::vector<double> values(const NDArray& a) {
  a.wait_to_read();
  if (a.dtype() == DType::kFloat64) return a.to_vector<double>();
  std::vector<float> f = a.to_vector<float>();
  return {f.begin(), f.end()};
}

// ---- planner --------------------------------------------------------------------------------

// A chain of n elementwise nodes over entries 0 (external input) .. n.
std::vector<PlanNode> chain(int n, bool inplace) {
  std::vector<PlanNode> nodes;
  for (int i = 0; i < n; ++i) {
    PlanNode p{{static_cast<uint32_t>(i)}, {static_cast<uint32_t>(i + 1)}, {}};
    if (inplace) p.inplace = {{0, 0}};
    nodes.push_back(p);
  }
  return nodes;
}

std::vector<PlanEntry> chain_entries(int n, size_t elements) {
  std::vector<PlanEntry> e(static_cast<size_t>(n + 1), PlanEntry{elements, 4, false, false});
  e[0].external = true;
  e.back().output = true;
  return e;
}

TEST(PlanMemory, InPlaceChainUsesOneBlock) {
  const MemoryPlan p = plan_memory(chain(5, true), chain_entries(5, 100), {});
  EXPECT_EQ(p.storage[0], -1);
  for (int e = 1; e <= 5; ++e) EXPECT_EQ(p.storage[e], 0) << e;
  EXPECT_EQ(p.inplace_input[1], -1);  // its input is external
  for (int e = 2; e <= 5; ++e) EXPECT_EQ(p.inplace_input[e], 0);
  EXPECT_EQ(p.planned_bytes, 400u);
}

TEST(PlanMemory, ReuseAlternatesTwoBlocksWithoutInPlace) {
  const MemoryPlan p = plan_memory(chain(5, false), chain_entries(5, 100), {});
  // Each output is allocated while its input is still live; the input's block is free after.
  EXPECT_EQ(p.planned_bytes, 800u);
  EXPECT_NE(p.storage[1], p.storage[2]);
  EXPECT_EQ(p.storage[1], p.storage[3]);
}

TEST(PlanMemory, MatchRangeZeroGivesEveryEntryItsBlock) {
  PlanOptions o;
  o.inplace = false;
  o.match_range = 0;
  const MemoryPlan p = plan_memory(chain(5, true), chain_entries(5, 100), o);
  EXPECT_EQ(p.planned_bytes, 2000u);
  EXPECT_EQ(p.block_bytes.size(), 5u);
}

TEST(PlanMemory, BlocksOutsideTheMatchRangeAreNotReused) {
  // 0 -> 1 (1000 elements) -> 2 (10 elements) -> 3 (10 elements).
  std::vector<PlanNode> nodes = chain(3, false);
  std::vector<PlanEntry> e = chain_entries(3, 1000);
  e[2].elements = e[3].elements = 10;
  const MemoryPlan p = plan_memory(nodes, e, {});
  EXPECT_NE(p.storage[3], p.storage[1]);  // 1000 > 10 * 16
  EXPECT_EQ(p.planned_bytes, 4000u + 40u + 40u);
}

TEST(PlanMemory, UnusedOutputIsFreedAtOnce) {
  // Node 0 writes entries 1 (used) and 2 (unused); node 1 reads 1 and writes 3.
  std::vector<PlanNode> nodes = {{{0}, {1, 2}, {}}, {{1}, {3}, {}}};
  std::vector<PlanEntry> e(4, PlanEntry{10, 4, false, false});
  e[0].external = true;
  e[3].output = true;
  const MemoryPlan p = plan_memory(nodes, e, {});
  EXPECT_EQ(p.storage[3], p.storage[2]);
  EXPECT_EQ(p.planned_bytes, 80u);
}

TEST(PlanMemory, TrueByteSizesAreAllocated) {
  std::vector<PlanEntry> e = chain_entries(1, 10);
  e[1].dtype_size = 8;
  const MemoryPlan p = plan_memory(chain(1, false), e, {});
  EXPECT_EQ(p.planned_bytes, 40u);  // MXNet's count: 4 bytes an element
  EXPECT_EQ(p.allocated_bytes, 80u);
}

// ---- gradient graph -------------------------------------------------------------------------

TEST(GradientGraph, NamesHeadGradientsAndBackwardNodes) {
  Symbol x = Symbol::variable("x");
  Symbol y = op("_mul_scalar", {x}, {{"scalar", "2"}}, "mul0");
  const GradientGraph g = build_gradient_graph(y, {x.outputs[0]});
  ASSERT_EQ(g.head_grads.size(), 1u);
  EXPECT_EQ(g.head_grads[0]->name, "_head_grad_0");
  ASSERT_EQ(g.grads.size(), 1u);
  EXPECT_EQ(g.grads[0].node->name, "mul0_backward");
  EXPECT_EQ(g.grads[0].node->op->name, "_mul_scalar");
  ASSERT_EQ(g.grads[0].node->control_deps.size(), 1u);
  EXPECT_EQ(g.grads[0].node->control_deps[0], y.outputs[0].node);
  EXPECT_EQ(g.grads[0].node->attrs.at("scalar"), "2");
}

TEST(GradientGraph, SumsGradientsOfSharedEntries) {
  Symbol x = Symbol::variable("x");
  Symbol a = op("_mul_scalar", {x}, {{"scalar", "2"}}, "a");
  Symbol b = op("_mul_scalar", {x}, {{"scalar", "3"}}, "b");
  const GradientGraph g = build_gradient_graph(Symbol::group({a, b}), {x.outputs[0]});
  EXPECT_EQ(g.grads[0].node->name, "sum_grad");
  EXPECT_EQ(g.grads[0].node->op->name, "add_n");
  EXPECT_EQ(g.grads[0].node->inputs.size(), 2u);
}

TEST(GradientGraph, OperatorWithoutRuleIsNonDifferentiable) {
  Symbol x = Symbol::variable("x");
  Symbol y = op("argmax", {x}, {{"axis", "1"}}, "am");
  Symbol z = op("_mul_scalar", {y}, {{"scalar", "2"}}, "mul0");
  try {
    build_gradient_graph(z, {x.outputs[0]});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Operator argmax is non-differentiable because it "
                                         "didn't register FGradient attribute."),
              std::string::npos)
        << e.what();
  }
}

TEST(GradientGraph, MirrorCopiesChosenNodes) {
  Symbol x = Symbol::variable("x");
  Symbol a = op("_mul_scalar", {x}, {{"scalar", "2"}}, "a");
  Symbol b = op("_mul_scalar", {a}, {{"scalar", "3"}}, "b");
  const GradientGraph g =
      build_gradient_graph(b, {x.outputs[0]}, [](const Node& n) { return n.name == "a"; });
  // b's rule reads none of its inputs; a's backward is built from a's mirror.
  const Node& a_back = *g.grads[0].node;
  EXPECT_EQ(a_back.name, "a_mirror_backward");  // named after the node it reads, as nnvm does
  ASSERT_EQ(a_back.control_deps.size(), 1u);
  EXPECT_EQ(a_back.control_deps[0]->name, "a_mirror");
}

TEST(GradientGraph, DefaultMirrorFollowsMXNetRules) {
  Symbol x = Symbol::variable("x");
  Symbol a = op("_mul_scalar", {x}, {{"scalar", "2"}}, "a");
  Symbol fc = op("FullyConnected", {x}, {{"num_hidden", "2"}}, "fc");
  EXPECT_FALSE(default_mirror(*a.outputs[0].node, false));
  EXPECT_TRUE(default_mirror(*a.outputs[0].node, true));
  EXPECT_FALSE(default_mirror(*fc.outputs[0].node, true));
  EXPECT_FALSE(default_mirror(*x.outputs[0].node, true));
  a.set_attr("force_mirroring", "True");
  EXPECT_TRUE(default_mirror(*a.outputs[0].node, false));
}

// ---- executor -------------------------------------------------------------------------------

TEST(Executor, ForwardOnlyDot) {
  Symbol a = Symbol::variable("A"), b = Symbol::variable("B");
  Symbol d = op("dot", {a, b}, {}, "dot0");
  Executor e(d, Context::cpu(0), {array({2, 2}, {1, 2, 3, 4}), array({2, 2}, {1, 0, 0, 1})}, {},
             {GradReq::kNull, GradReq::kNull}, {});
  e.forward(false);
  EXPECT_EQ(values(e.outputs()[0]), (std::vector<double>{1, 2, 3, 4}));
  EXPECT_EQ(e.num_backward_nodes(), 0u);
  e.backward({});  // nothing bound: does nothing
}

// y = ((x * 2) + 1) * 3: dy/dx = 6.
Symbol affine_chain() {
  Symbol x = Symbol::variable("x");
  Symbol a = op("_mul_scalar", {x}, {{"scalar", "2"}}, "a");
  Symbol b = op("_plus_scalar", {a}, {{"scalar", "1"}}, "b");
  return op("_mul_scalar", {b}, {{"scalar", "3"}}, "c");
}

TEST(Executor, ForwardBackwardWriteAddNull) {
  const Symbol y = affine_chain();
  NDArray x = array({3}, {1, 2, 3});
  NDArray gx = array({3}, {10, 10, 10});
  {
    Executor e(y, Context::cpu(0), {x}, {gx}, {GradReq::kWrite}, {});
    e.forward(true);
    EXPECT_EQ(values(e.outputs()[0]), (std::vector<double>{9, 15, 21}));
    EXPECT_TRUE(e.head_grad_needed()[0]);
    EXPECT_THROW(e.backward({}), Error);
    e.backward(std::vector<NDArray>{array({3}, {1, 2, 3})});
    EXPECT_EQ(values(gx), (std::vector<double>{6, 12, 18}));
  }
  {
    Executor e(y, Context::cpu(0), {x}, {gx}, {GradReq::kAdd}, {});
    e.forward(true);
    e.backward(std::vector<NDArray>{array({3}, {1, 1, 1})});
    e.backward(std::vector<NDArray>{array({3}, {1, 1, 1})});
    EXPECT_EQ(values(gx), (std::vector<double>{18, 24, 30}));
  }
  {
    Executor e(y, Context::cpu(0), {x}, {gx}, {GradReq::kNull}, {});
    EXPECT_TRUE(e.grad_arrays()[0].is_none());
    EXPECT_EQ(e.num_backward_nodes(), 0u);
  }
}

TEST(Executor, SimpleBindZeroFillsAndInfers) {
  Symbol a = Symbol::variable("A"), b = Symbol::variable("B");
  Symbol d = op("dot", {a, b}, {}, "dot0");
  auto e = Executor::simple_bind(d, Context::cpu(0), {{"A", Shape{2, 3}}, {"B", Shape{3, 4}}}, {},
                                 {GradReq::kNull, GradReq::kNull});
  EXPECT_EQ(values(e->arg_arrays()[0]), std::vector<double>(6, 0.0));
  e->forward(false);
  EXPECT_EQ(e->outputs()[0].shape(), (Shape{2, 4}));
  try {
    Executor::simple_bind(d, Context::cpu(0), {{"A", Shape{2, 3}}}, {}, {});
    FAIL() << "expected an error";
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("cannot infer the shapes of arguments: B"),
              std::string::npos)
        << err.what();
  }
}

TEST(Executor, DebugStrEndsWithMXNetTotals) {
  Symbol a = Symbol::variable("A"), b = Symbol::variable("B");
  Symbol d = op("dot", {a, b}, {}, "dot0");
  auto e = Executor::simple_bind(d, Context::cpu(0),
                                 {{"A", Shape{1024, 1024}}, {"B", Shape{1024, 1024}}}, {},
                                 {GradReq::kNull, GradReq::kNull});
  const std::string s = e->debug_str();
  const std::string tail = "Total 4 MB allocated\nTotal 11 TempSpace resource requested\n";
  ASSERT_GE(s.size(), tail.size());
  EXPECT_EQ(s.substr(s.size() - tail.size()), tail) << s;
  EXPECT_EQ(s.rfind("Symbol Outputs:\n\toutput[0]=dot0(0)\n", 0), 0u) << s;
}

// A chain of n elementwise scalar ops: sharing on and off and mirroring give the same values,
// sharing plans fewer bytes.
TEST(Executor, SharingAndMirrorGiveIdenticalResults) {
  Symbol s = Symbol::variable("x");
  for (int i = 0; i < 6; ++i) {
    s = op(i % 2 ? "_plus_scalar" : "_mul_scalar", {s}, {{"scalar", std::to_string(1.5 + i)}},
           "n" + std::to_string(i));
  }
  std::vector<double> in;
  for (int i = 0; i < 64; ++i) in.push_back(0.25 * i - 3);
  auto run = [&](ExecutorOptions o, size_t* planned) {
    NDArray g(Shape{64}, Context::cpu(0));
    Executor e(s, Context::cpu(0), {array({64}, in)}, {g}, {GradReq::kWrite}, {}, o);
    e.forward(true);
    e.backward(std::vector<NDArray>{array({64}, in)});
    *planned = e.planned_bytes();
    std::vector<double> r = values(e.outputs()[0]);
    for (double v : values(g)) r.push_back(v);
    return r;
  };
  ExecutorOptions shared;
  ExecutorOptions unshared;
  unshared.plan.inplace = false;
  unshared.plan.match_range = 0;
  ExecutorOptions mirror;
  mirror.mirror = true;
  size_t b_shared = 0, b_unshared = 0, b_mirror = 0;
  const std::vector<double> r1 = run(shared, &b_shared);
  EXPECT_EQ(run(unshared, &b_unshared), r1);
  EXPECT_EQ(run(mirror, &b_mirror), r1);
  EXPECT_LT(b_shared, b_unshared);
}

// Central differences in float64 against the executor's gradient, for y = sum(w * out) with
// a fixed random projection w as the head gradient.
void check_numeric_gradient(const Symbol& sym, const std::vector<Shape>& shapes) {
  std::vector<NDArray> args, grads;
  std::vector<std::vector<double>> inputs;
  unsigned seed = 7;
  auto rnd = [&] {
    seed = seed * 1103515245u + 12345u;
    return static_cast<double>((seed >> 8) % 2000) / 1000.0 - 1.0;
  };
  for (const Shape& s : shapes) {
    std::vector<double> v;
    for (int64_t i = 0; i < s.size(); ++i) v.push_back(rnd());
    inputs.push_back(v);
    args.push_back(array(s, v, DType::kFloat64));
    grads.push_back(NDArray(s, Context::cpu(0), DType::kFloat64));
  }
  Executor e(sym, Context::cpu(0), args, grads, std::vector<GradReq>(args.size(), GradReq::kWrite),
             {});
  e.forward(true);
  const Shape out_shape = e.outputs()[0].shape();
  std::vector<double> w;
  for (int64_t i = 0; i < out_shape.size(); ++i) w.push_back(rnd());
  e.backward(std::vector<NDArray>{array(out_shape, w, DType::kFloat64)});
  auto loss = [&] {
    e.forward(false);
    const std::vector<double> o = values(e.outputs()[0]);
    double l = 0;
    for (size_t i = 0; i < o.size(); ++i) l += o[i] * w[i];
    return l;
  };
  std::vector<std::vector<double>> analytic;
  for (const NDArray& g : grads) analytic.push_back(values(g));
  const double h = 1e-6;
  for (size_t a = 0; a < args.size(); ++a) {
    for (size_t i = 0; i < inputs[a].size(); ++i) {
      std::vector<double> v = inputs[a];
      v[i] += h;
      args[a].sync_copy_from_cpu(v.data(), v.size() * sizeof(double));
      const double lp = loss();
      v[i] -= 2 * h;
      args[a].sync_copy_from_cpu(v.data(), v.size() * sizeof(double));
      const double lm = loss();
      args[a].sync_copy_from_cpu(inputs[a].data(), v.size() * sizeof(double));
      EXPECT_NEAR(analytic[a][i], (lp - lm) / (2 * h), 1e-5)
          << "argument " << a << " [" << i << "]";
    }
  }
}

TEST(Executor, NumericGradientOfScalarChain) {
  check_numeric_gradient(affine_chain(), {Shape{2, 3}});
}

// Graphs of the operators whose rules are registered: each is checked where it exists.
TEST(Executor, NumericGradientOfRegisteredOperators) {
  struct Case {
    const char* op;
    std::function<Symbol()> make;
    std::vector<Shape> shapes;
  };
  auto x = [] { return Symbol::variable("x"); };
  auto y = [] { return Symbol::variable("y"); };
  const std::vector<Case> cases = {
      {"dot",
       [&] {
         return op("dot", {x(), y()}, {}, "d");
       },
       {Shape{2, 3}, Shape{3, 4}}},
      {"FullyConnected",
       [&] {
         return op("FullyConnected", {x()}, {{"num_hidden", "3"}}, "fc");
       },
       {Shape{2, 4}, Shape{3, 4}, Shape{3}}},
      {"Activation",
       [&] {
         return op("Activation", {x()}, {{"act_type", "tanh"}}, "act");
       },
       {Shape{2, 3}}},
      {"elemwise_mul",
       [&] {
         return op("elemwise_mul", {x(), y()}, {}, "m");
       },
       {Shape{2, 3}, Shape{2, 3}}},
  };
  for (const Case& c : cases) {
    if (ops::find_op(c.op) == nullptr || ops::find_gradient(ops::get_op(c.op)) == nullptr) {
      continue;  // no rule yet
    }
    SCOPED_TRACE(c.op);
    check_numeric_gradient(c.make(), c.shapes);
  }
}

// ---- C API ----------------------------------------------------------------------------------

TEST(ExecutorCApi, SimpleBindForwardOutputsPrintFree) {
  SymbolHandle a = nullptr, b = nullptr, d = nullptr;
  ASSERT_EQ(MXSymbolCreateVariable("A", &a), 0);
  ASSERT_EQ(MXSymbolCreateVariable("B", &b), 0);
  OpHandle dot = nullptr;
  ASSERT_EQ(NNGetOpHandle("dot", &dot), 0);
  ASSERT_EQ(MXSymbolCreateAtomicSymbol(dot, 0, nullptr, nullptr, &d), 0);
  SymbolHandle args[] = {a, b};
  ASSERT_EQ(MXSymbolCompose(d, "dot0", 2, nullptr, args), 0);
  const char* names[] = {"A", "B"};
  const int data[] = {2, 2, 2, 2};
  const uint32_t idx[] = {0, 2, 4};
  const char* req[] = {"null"};
  uint32_t n_args = 0, n_aux = 0;
  NDArrayHandle *in_args = nullptr, *grads = nullptr, *aux = nullptr;
  ExecutorHandle exec = nullptr;
  ASSERT_EQ(MXExecutorSimpleBindEx(d, 1, 0, 0, nullptr, nullptr, nullptr, 0, nullptr, req, 2, names,
                                   data, idx, 0, nullptr, nullptr, 0, nullptr, nullptr, 0, nullptr,
                                   nullptr, nullptr, nullptr, nullptr, nullptr, &n_args, &in_args,
                                   &grads, &n_aux, &aux, nullptr, &exec),
            0)
      << MXGetLastError();
  ASSERT_EQ(n_args, 2u);
  EXPECT_EQ(grads[0], nullptr);
  std::vector<NDArrayHandle> arg_handles(in_args, in_args + n_args);
  ASSERT_EQ(MXExecutorForward(exec, 0), 0) << MXGetLastError();
  uint32_t n_out = 0;
  NDArrayHandle* outs = nullptr;
  ASSERT_EQ(MXExecutorOutputs(exec, &n_out, &outs), 0);
  ASSERT_EQ(n_out, 1u);
  NDArrayHandle out = outs[0];
  float result[4] = {1, 1, 1, 1};
  ASSERT_EQ(MXNDArraySyncCopyToCPU(out, result, 4), 0) << MXGetLastError();
  EXPECT_EQ(result[0], 0.0f);
  const char* text = nullptr;
  ASSERT_EQ(MXExecutorPrint(exec, &text), 0);
  EXPECT_NE(std::string(text).find("Total 0 MB allocated\n"), std::string::npos);
  uint64_t planned = 0;
  ASSERT_EQ(NNExecutorGetInfo(exec, &planned, nullptr, nullptr, nullptr), 0);
  EXPECT_EQ(planned, 16u);
  ASSERT_EQ(MXExecutorFree(exec), 0);
  EXPECT_NE(MXExecutorFree(exec), 0);     // stale handle
  EXPECT_NE(MXExecutorForward(a, 0), 0);  // wrong kind
  for (NDArrayHandle h : arg_handles) MXNDArrayFree(h);
  MXNDArrayFree(out);
  MXSymbolFree(a);
  MXSymbolFree(b);
  MXSymbolFree(d);
}

}  // namespace
}  // namespace nanomx::symbol
