// Profiles a small multi-threaded pipeline with nanomx's C++ profiler: the main thread pushes
// operator-like work items onto a queue, worker threads run them (recorded as operators on the
// cpu/0 row, each linked to its push by a flow arrow), and the run is annotated with a task per
// iteration, a queue-depth counter, iteration markers and memory counters. Writes the trace and
// prints MXNet's aggregate table.
//
//   profile_workers [trace.json]
//
// The operator, flow and memory records go through the runtime's own recording hooks
// (src/profiler/hooks.h, internal), as a runtime layer would; the rest is the public API.
#include <nanomx/profiler.h>

#include <condition_variable>
#include <cstdio>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "profiler/hooks.h"

namespace prof = nanomx::profiler;

namespace {

struct WorkItem {
  prof::NameId op;
  int n;  // square matrix size
  uint64_t flow_id;
};

// A toy operator: an n×n matmul (or elementwise pass), enough work to be visible in the trace.
float run_kernel(const std::string& op, int n) {
  std::vector<float> a(static_cast<size_t>(n) * n, 1.5f), b(a.size(), 0.5f), c(a.size(), 0.f);
  if (op == "dot") {
    for (int i = 0; i < n; ++i)
      for (int k = 0; k < n; ++k)
        for (int j = 0; j < n; ++j) c[i * n + j] += a[i * n + k] * b[k * n + j];
  } else {
    for (size_t i = 0; i < a.size(); ++i) c[i] = op == "relu" ? (a[i] > 0 ? a[i] : 0) : a[i] + b[i];
  }
  return c[0];
}

class WorkQueue {
 public:
  void push(WorkItem item) {
    std::lock_guard<std::mutex> lock(mutex_);
    items_.push_back(item);
    ready_.notify_one();
  }
  bool pop(WorkItem* item) {
    std::unique_lock<std::mutex> lock(mutex_);
    ready_.wait(lock, [&] { return closed_ || !items_.empty(); });
    if (items_.empty()) return false;
    *item = items_.front();
    items_.pop_front();
    return true;
  }
  void close() {
    std::lock_guard<std::mutex> lock(mutex_);
    closed_ = true;
    ready_.notify_all();
  }
  size_t size() {
    std::lock_guard<std::mutex> lock(mutex_);
    return items_.size();
  }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<WorkItem> items_;
  bool closed_ = false;
};

}  // namespace

int main(int argc, char** argv) {
  std::string trace = argc > 1 ? argv[1] : "profile_workers.json";
  prof::set_config({{"profile_all", "true"},
                    {"aggregate_stats", "true"},
                    {"continuous_dump", "true"},
                    {"dump_period", "0.2"},
                    {"filename", trace}});
  prof::set_state(prof::State::kRunning);

  prof::Domain pipeline("Pipeline");
  prof::Counter queue_depth(pipeline, "queue depth");
  prof::Marker iteration_start(pipeline, "iteration start");
  const int cpu0 = prof::device_slot(prof::device_code::kCPU, 0);
  const prof::NameId operator_category = prof::intern("operator");
  const std::vector<std::string> op_names = {"dot", "relu", "elemwise_add"};
  std::vector<prof::NameId> op_ids;
  for (const auto& name : op_names) op_ids.push_back(prof::intern(name));

  WorkQueue queue;
  float checksum = 0;
  std::mutex checksum_mutex;
  std::vector<std::thread> workers;
  for (int w = 0; w < 2; ++w) {
    workers.emplace_back([&, w] {
      prof::set_thread_name("cpu/0 worker " + std::to_string(w));
      WorkItem item;
      while (queue.pop(&item)) {
        const std::string& name = op_names[item.op == op_ids[0] ? 0 : item.op == op_ids[1] ? 1 : 2];
        uint64_t bytes = 3ull * item.n * item.n * sizeof(float);
        prof::memory_alloc(cpu0, bytes);
        uint64_t begin = prof::now_ticks();
        float value = run_kernel(name, item.n);
        uint64_t end = prof::now_ticks();
        prof::memory_free(cpu0, bytes);
        int64_t dims[2] = {item.n, item.n};
        prof::ShapeView shape{dims, 2};
        prof::ShapeView inputs[2] = {shape, shape};
        prof::record_operator(item.op, cpu0, begin, end, {inputs, {inputs, 1}}, item.flow_id);
        std::lock_guard<std::mutex> lock(checksum_mutex);
        checksum += value;
      }
    });
  }

  for (int iteration = 0; iteration < 20; ++iteration) {
    iteration_start.mark(prof::MarkerScope::kProcess);
    prof::Task task(pipeline, "iteration " + std::to_string(iteration % 4));
    task.start();
    {
      NANOMX_PROFILE_SCOPE("push batch");
      for (int i = 0; i < 12; ++i) {
        prof::NameId op = op_ids[static_cast<size_t>(i) % op_ids.size()];
        int n = op == op_ids[0] ? 96 : 256;
        queue.push({op, n, prof::flow_start(operator_category, prof::kImperative)});
      }
    }
    queue_depth.set_value(queue.size());
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    queue_depth.set_value(queue.size());
    task.stop();
  }
  queue.close();
  for (auto& t : workers) t.join();

  prof::set_state(prof::State::kStopped);
  prof::dump(true);
  std::printf("%s", prof::dumps().c_str());
  std::printf("trace written to %s (checksum %.1f)\n", trace.c_str(), checksum);
  return 0;
}
