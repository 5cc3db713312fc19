// A synthetic trace shaped like the ones nanomx writes (docs/trace-format.md): operators as B/E
// pairs with shape args on four cpu worker threads, C API b/e calls and counters on the main
// thread, push-to-run flow arrows, memory counters and markers. Deterministic for a given size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

namespace nanomx::trace::bench {

inline void append_ts(std::string* out, uint64_t ns) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%llu.%03llu", static_cast<unsigned long long>(ns / 1000),
                static_cast<unsigned long long>(ns % 1000));
  out->append(buffer);
}

// What the trace holds beyond the base shape (all off: the summary benchmark's trace).
struct SyntheticOptions {
  // Dependency flows (cat "dependency"): op k depends on op k-2 (another worker) when that one
  // ended before op k starts.
  bool dependency_flows = false;
  // A ProfilerStep#N span on the main thread every `ops_per_step` operators (0: none).
  int ops_per_step = 0;
  // Runs of operators of this name take `slowdown` times as long (the NEW side of `diff`).
  const char* slower_op = nullptr;
  double slowdown = 1.0;
};

// About `events` events (whole operator groups); the JSON object form with otherData.
inline std::string synthetic_nanomx_trace(size_t events, const SyntheticOptions& options = {}) {
  static const char* const kOps[] = {"dot",     "elemwise_add",   "Convolution", "Activation",
                                     "Pooling", "FullyConnected", "BatchNorm",   "softmax"};
  std::string out = "{\"traceEvents\":[\n";
  auto line = [&](const std::string& text) {
    out += text;
    out += ",\n";
  };
  for (int slot = 0; slot < 4; ++slot) {
    std::string s = std::to_string(slot);
    line("{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":" + s +
         ",\"tid\":0,\"args\":{\"name\":\"cpu/" + s + "\"}}");
    line("{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":" + s +
         ",\"tid\":0,\"args\":{\"sort_index\":" + s + "}}");
    line("{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":" + s + ",\"tid\":" +
         std::to_string(slot + 2) + ",\"args\":{\"name\":\"cpu/" + s + " worker 0\"}}");
  }
  line(
      "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1000,\"tid\":0,\"args\":{\"name\":"
      "\"MXNET_C_API\"}}");
  line(
      "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1000,\"tid\":1,\"args\":{\"name\":"
      "\"main\"}}");
  line(
      "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1001,\"tid\":0,\"args\":{\"name\":"
      "\"Device Storage\"}}");
  line(
      "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1002,\"tid\":0,\"args\":{\"name\":"
      "\"train,instant_marker\"}}");
  size_t written = 17;
  uint64_t now = 1000;  // ns
  uint64_t memory = 1 << 20;
  uint64_t op = 0;
  uint64_t recent_end[2] = {0, 0};  // run ends of ops k-2 and k-1
  uint64_t step_start = now;
  while (written < events) {
    const char* name = kOps[(op * 7 + op / 3) % 8];
    int slot = static_cast<int>(op % 4);
    std::string pid = std::to_string(slot), tid = std::to_string(slot + 2);
    uint64_t api_begin = now, push = now + 700, api_end = now + 1900;
    std::string e;
    e = "{\"name\":\"MXImperativeInvoke\",\"cat\":\"MXNET_C_API\",\"ph\":\"b\",\"ts\":";
    append_ts(&e, api_begin);
    e += ",\"pid\":1000,\"tid\":1,\"id\":1}";
    line(e);
    e = "{\"name\":\"MXNet C API Calls\",\"cat\":\"MXNET_C_API\",\"ph\":\"C\",\"ts\":";
    append_ts(&e, api_begin);
    e += ",\"pid\":1000,\"tid\":1,\"args\":{\"MXNet C API Calls\":" + std::to_string(op + 1) + "}}";
    line(e);
    e = "{\"name\":\"" + std::string(name) + "\",\"cat\":\"operator\",\"ph\":\"s\",\"ts\":";
    append_ts(&e, push);
    e += ",\"pid\":1000,\"tid\":1,\"id\":" + std::to_string(op + 1) + "}";
    line(e);
    e = "{\"name\":\"MXImperativeInvoke\",\"cat\":\"MXNET_C_API\",\"ph\":\"e\",\"ts\":";
    append_ts(&e, api_end);
    e += ",\"pid\":1000,\"tid\":1,\"id\":1}";
    line(e);
    uint64_t run_begin = now + 2500 + (op % 5) * 300, run_end = run_begin + 3000 + (op % 13) * 450;
    if (options.slower_op && std::string(name) == options.slower_op) {
      run_end = run_begin +
                static_cast<uint64_t>(static_cast<double>(run_end - run_begin) * options.slowdown);
    }
    if (options.dependency_flows && op >= 2 && recent_end[0] <= run_begin) {
      // Op k-2 ran on worker (k-2) % 4.
      std::string from_pid = std::to_string((op - 2) % 4),
                  from_tid = std::to_string((op - 2) % 4 + 2);
      std::string id = std::to_string(op + 1);
      e = "{\"name\":\"dependency\",\"cat\":\"dependency\",\"ph\":\"s\",\"ts\":";
      append_ts(&e, recent_end[0]);
      e += ",\"pid\":" + from_pid + ",\"tid\":" + from_tid + ",\"id\":" + id + "}";
      line(e);
      e = "{\"name\":\"dependency\",\"cat\":\"dependency\",\"ph\":\"f\",\"bp\":\"e\",\"ts\":";
      append_ts(&e, run_begin);
      e += ",\"pid\":" + pid + ",\"tid\":" + tid + ",\"id\":" + id + "}";
      line(e);
      written += 2;
    }
    recent_end[0] = recent_end[1];
    recent_end[1] = run_end;
    e = "{\"name\":\"" + std::string(name) +
        "\",\"cat\":\"operator\",\"ph\":\"f\",\"bp\":\"e\","
        "\"ts\":";
    append_ts(&e, run_begin);
    e += ",\"pid\":" + pid + ",\"tid\":" + tid + ",\"id\":" + std::to_string(op + 1) + "}";
    line(e);
    e = "{\"name\":\"" + std::string(name) + "\",\"cat\":\"operator\",\"ph\":\"B\",\"ts\":";
    append_ts(&e, run_begin);
    e += ",\"pid\":" + pid + ",\"tid\":" + tid +
         ",\"args\":{\"inputs\":[[64,128],[128,256]],\"outputs\":[[64,256]]}}";
    line(e);
    e = "{\"name\":\"" + std::string(name) + "\",\"cat\":\"operator\",\"ph\":\"E\",\"ts\":";
    append_ts(&e, run_end);
    e += ",\"pid\":" + pid + ",\"tid\":" + tid + "}";
    line(e);
    written += 7;
    if (op % 50 == 0) {
      memory += (op % 100 == 0) ? 65536 : 0;
      e = "{\"name\":\"Memory: cpu/0\",\"cat\":\"Device Storage\",\"ph\":\"C\",\"ts\":";
      append_ts(&e, run_begin);
      e += ",\"pid\":1001,\"tid\":1,\"args\":{\"Memory: cpu/0\":" + std::to_string(memory) + "}}";
      line(e);
      ++written;
    }
    if (op % 1000 == 0) {
      e = "{\"name\":\"iteration " + std::to_string(op / 1000) +
          "\",\"cat\":\"train,instant_marker\",\"ph\":\"n\",\"ts\":";
      append_ts(&e, now);
      e += ",\"id\":1,\"s\":\"g\",\"pid\":1002,\"tid\":1}";
      line(e);
      ++written;
    }
    now += 2100;
    ++op;
    if (options.ops_per_step > 0 && op % static_cast<uint64_t>(options.ops_per_step) == 0) {
      e = "{\"name\":\"ProfilerStep#" + std::to_string(op / options.ops_per_step - 1) +
          "\",\"cat\":\"ProfilerStep\",\"ph\":\"X\",\"ts\":";
      append_ts(&e, step_start);
      e += ",\"dur\":";
      append_ts(&e, now - step_start);
      e += ",\"pid\":1000,\"tid\":1}";
      line(e);
      ++written;
      step_start = now;
    }
  }
  out.resize(out.size() - 2);  // the last ",\n"
  out +=
      "\n],\"displayTimeUnit\":\"ms\",\"otherData\":{\"producer\":\"nanomx-trace bench\","
      "\"clock\":\"CLOCK_MONOTONIC\",\"time_zero_unix_ns\":1764670000000000000,"
      "\"time_zero_monotonic_ns\":1000000000,\"boot_id\":\"bench\",\"dropped_events\":0}}\n";
  return out;
}

}  // namespace nanomx::trace::bench
