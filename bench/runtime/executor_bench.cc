// Executor overhead per node: forward of a chain of 100 `_plus_scalar` nodes on a 10-element
// array (each node one engine operation), time per node; beside the same 100 operators called
// imperatively (parse, infer, allocate and push per call), the path the executor's bind-time
// preparation saves. torch's eager loop is the peer in bench/compare_symbolic.py.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "nanomx/ops.h"
#include "symbol/executor.h"

namespace nanomx {
namespace {

constexpr int kNodes = 100;

symbol::Symbol chain() {
  symbol::Symbol s = symbol::Symbol::variable("data");
  for (int i = 0; i < kNodes; ++i) {
    symbol::Symbol n = symbol::Symbol::atomic(ops::get_op("_plus_scalar"), {{"scalar", "1"}});
    n.compose({s}, {}, "plus" + std::to_string(i));
    s = n;
  }
  return s;
}

void BM_ExecutorChainForwardPerNode(benchmark::State& state) {
  auto exe = symbol::Executor::simple_bind(chain(), Context::cpu(0), {{"data", Shape{10}}}, {},
                                           {symbol::GradReq::kNull});
  // range(0) forwards per wait: 1 (latency of a whole forward) or many (pushes pipelined).
  const int64_t per_wait = state.range(0);
  for (auto _ : state) {
    for (int64_t i = 0; i < per_wait; ++i) exe->forward(false);
    exe->outputs()[0].wait_to_read();
  }
  state.SetItemsProcessed(state.iterations() * kNodes * per_wait);
  state.counters["ns_per_node"] =
      benchmark::Counter(static_cast<double>(state.iterations() * kNodes * per_wait),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_ExecutorChainForwardPerNode)->Arg(1)->Arg(100)->UseRealTime();

void BM_ImperativeChainPerNode(benchmark::State& state) {
  const ops::Op& plus = ops::get_op("_plus_scalar");
  const ops::Attrs attrs = {{"scalar", "1"}};
  NDArray x(Shape{10}, Context::cpu(0));
  for (auto _ : state) {
    NDArray y = x;
    for (int i = 0; i < kNodes; ++i) y = ops::invoke_one(plus, {&y, 1}, attrs);
    y.wait_to_read();
  }
  state.SetItemsProcessed(state.iterations() * kNodes);
  state.counters["ns_per_node"] =
      benchmark::Counter(static_cast<double>(state.iterations() * kNodes),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_ImperativeChainPerNode)->UseRealTime();

}  // namespace
}  // namespace nanomx

BENCHMARK_MAIN();
