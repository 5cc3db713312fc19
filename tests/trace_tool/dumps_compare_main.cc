// Records user objects with the real profiler (aggregate stats on), then writes the profiler's
// own aggregate table and JSON (`dumps()`) next to the trace. The test runs `nanomx-trace
// summary` on the trace and expects the same text: the tool and the profiler agree.
//
// usage: trace_dumps_compare OUT.json   (writes OUT.json, OUT.json.table, OUT.json.jsonstats)
#include <cstdio>
#include <string>
#include <thread>

#include "nanomx/profiler.h"

namespace {

void busy_wait_us(int us) {
  // Sleeping is enough to make distinct durations.
  std::this_thread::sleep_for(std::chrono::microseconds(us));
}

bool write_file(const std::string& path, const std::string& text) {
  FILE* file = std::fopen(path.c_str(), "wb");
  if (!file) return false;
  bool ok = std::fwrite(text.data(), 1, text.size(), file) == text.size();
  return std::fclose(file) == 0 && ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT.json\n", argv[0]);
    return 2;
  }
  namespace profiler = nanomx::profiler;
  const std::string out = argv[1];
  profiler::set_config({{"profile_all", "true"},
                        {"aggregate_stats", "true"},
                        {"filename", out},
                        {"continuous_dump", "false"}});
  profiler::set_state(profiler::State::kRunning);
  profiler::Domain domain("compare");
  profiler::Counter counter(domain, "items");
  profiler::Marker marker(domain, "start");
  marker.mark(profiler::MarkerScope::kProcess);
  auto work = [&](int thread) {
    for (int i = 0; i < 5; ++i) {
      profiler::Task task(domain, thread == 0 ? "load" : "decode");
      task.start();
      busy_wait_us(50 + 40 * i);
      {
        profiler::Event event("inner step");
        event.start();
        busy_wait_us(30 + 10 * thread);
        event.stop();
      }
      task.stop();
      counter.increment(3 + thread);
    }
  };
  std::thread other(work, 1);
  work(0);
  other.join();
  profiler::Frame frame(domain, "iteration");
  frame.start();
  busy_wait_us(200);
  frame.stop();
  profiler::set_state(profiler::State::kStopped);
  std::string table = profiler::dumps(false, profiler::StatsFormat::kTable);
  std::string json = profiler::dumps(false, profiler::StatsFormat::kJson);
  profiler::dump(true);
  if (!write_file(out + ".table", table) || !write_file(out + ".jsonstats", json)) {
    std::fprintf(stderr, "cannot write %s.table / .jsonstats\n", out.c_str());
    return 1;
  }
  return 0;
}
