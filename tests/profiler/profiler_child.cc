// A child process for the crash and environment tests (profiler_crash_test.cc).
//   profiler_child continuous FILE   records counters forever, prints "flushed N" after each
//                                    dump(false) that holds every value up to N
//   profiler_child record            records a counter and an operator, then exits normally
//   profiler_child heavy FILE [THREADS]
//                                    the fault test's load (tests/fault): THREADS (4) threads
//                                    push small operators through the engine forever (flows,
//                                    operators, memory), each with its own counter and event,
//                                    profile_all, continuous dump every 0.1 s; prints "running"
//                                    once recording started
//   profiler_child rotating FILE     the rotation fault test's load (tests/fault): records the
//                                    counter "progress" 0, 1, 2, ... into rotating files of
//                                    0.05 MiB (continuous dump every 20 ms), prints "recording"
//                                    once it records, then "flushed N" after each dump(false)
//                                    that holds every value up to N
//   profiler_child mode              prints the profiler's mode and state
//   profiler_child flush-then-exit FILE
//                                    dumps once without finishing, records more, then exits
//                                    normally: the final dump at exit writes the rest
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "nanomx/ndarray.h"
#include "nanomx/ops.h"
#include "nanomx/profiler.h"
#include "profiler/hooks.h"

namespace prof = nanomx::profiler;

int main(int argc, char** argv) {
  std::string what = argc > 1 ? argv[1] : "";
  if (what == "continuous" && argc > 2) {
    // The continuous-dump thread flushes on its own while this thread also flushes and reports
    // each flush; the parent kills the process at some point after a report.
    prof::set_config({{"profile_all", "true"},
                      {"filename", argv[2]},
                      {"continuous_dump", "true"},
                      {"dump_period", "0.2"}});
    prof::set_state(prof::State::kRunning);
    prof::Domain domain("Crash");
    prof::Counter counter(domain, "progress");
    for (uint64_t i = 0;; ++i) {
      counter.set_value(i);
      if (i % 500 == 499) {
        prof::dump(false);
        std::printf("flushed %llu\n", static_cast<unsigned long long>(i));
        std::fflush(stdout);
        std::this_thread::sleep_for(std::chrono::microseconds(500));
      }
    }
  }
  if (what == "heavy" && argc > 2) {
    prof::set_config({{"profile_all", "true"},
                      {"filename", argv[2]},
                      {"continuous_dump", "true"},
                      {"dump_period", "0.1"}});
    prof::set_state(prof::State::kRunning);
    const int threads = argc > 3 ? std::atoi(argv[3]) : 4;
    std::printf("running\n");
    std::fflush(stdout);
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
      workers.emplace_back([t] {
        prof::Domain domain("Load");
        prof::Counter progress(domain, "progress " + std::to_string(t));
        prof::Event step("step " + std::to_string(t));
        const nanomx::Context cpu{nanomx::DeviceType::kCPU, 0};
        nanomx::NDArray a(nanomx::Shape{256}, cpu), b(nanomx::Shape{256}, cpu);
        const nanomx::ops::Op& add = nanomx::ops::get_op("broadcast_add");
        std::vector<nanomx::NDArray> in_flight;
        for (uint64_t i = 0;; ++i) {
          step.start();
          nanomx::NDArray inputs[2] = {a, b};
          in_flight.push_back(nanomx::ops::invoke_one(add, inputs, {}));
          if (in_flight.size() == 16) {  // a bounded queue, and fresh allocations
            for (const auto& c : in_flight) c.wait_to_read();
            in_flight.clear();
          }
          progress.set_value(i);
          step.stop();
        }
      });
    }
    for (auto& w : workers) w.join();
    return 0;
  }
  if (what == "rotating" && argc > 2) {
    prof::set_config({{"profile_all", "true"},
                      {"filename", argv[2]},
                      {"continuous_dump", "true"},
                      {"dump_period", "0.02"},
                      {"max_file_mb", "0.05"}});
    prof::set_state(prof::State::kRunning);
    // The parent's kill window starts here, not at the exec: loading the libraries alone can
    // take a few tenths of a second (cuBLAS in a CUDA build), more on a loaded machine.
    std::printf("recording\n");
    std::fflush(stdout);
    prof::Domain domain("Rotation");
    prof::Counter progress(domain, "progress");
    for (uint64_t i = 0;; ++i) {
      progress.set_value(i);
      if (i % 500 == 499) {
        prof::dump(false);
        std::printf("flushed %llu\n", static_cast<unsigned long long>(i));
        std::fflush(stdout);
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
    }
  }
  if (what == "record") {
    prof::Domain domain("Child");
    prof::Counter(domain, "child counter").set_value(3);
    uint64_t t = prof::now_ticks();
    if (prof::active(prof::kImperative))
      prof::record_operator(prof::intern("child_op"), 0, t, prof::now_ticks());
    return 0;
  }
  if (what == "flush-then-exit" && argc > 2) {
    prof::set_config({{"profile_all", "true"}, {"filename", argv[2]}, {"continuous_dump", "true"}});
    prof::set_state(prof::State::kRunning);
    prof::Domain domain("Exit");
    prof::Counter counter(domain, "before flush");
    counter.set_value(1);
    prof::dump(false);
    prof::Counter(domain, "after flush").set_value(2);
    return 0;
  }
  if (what == "mode") {
    std::printf("%u %d\n", prof::mode(), static_cast<int>(prof::state()));
    return 0;
  }
  std::fprintf(stderr,
               "usage: profiler_child continuous FILE | heavy FILE [THREADS] | rotating FILE | "
               "record | mode | flush-then-exit FILE\n");
  return 2;
}
