// nanomx-trace: read, merge, convert and view Chrome-trace files (nanomx's, MXNet's, PyTorch's,
// or any other writer's), and GPU memory profiles per scope. See docs/nanomx-trace.md.
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "convert.h"
#include "critical_path.h"
#include "diff.h"
#include "memory_profile.h"
#include "merge.h"
#include "summary.h"
#include "trace_file.h"
#include "trace_model.h"
#include "view.h"

namespace {

using namespace nanomx::trace;

constexpr const char* kUsage =
    "usage:\n"
    "  nanomx-trace summary FILE [--format table|json] [--sort-by total|avg|min|max|count]\n"
    "                            [--ascending] [--category C | --per-step]\n"
    "  nanomx-trace diff BASE NEW [--by name|category|step] [--threshold PCT]\n"
    "                            [--format text|json] [--fail-above PCT]\n"
    "  nanomx-trace critical-path FILE [--step N] [--format text|json]\n"
    "  nanomx-trace merge A.json B.json ... -o OUT.json  (a rotated series: one process)\n"
    "  nanomx-trace convert IN -o OUT          (.json <-> .json.gz, by OUT's name)\n"
    "  nanomx-trace memory CSV [CSV...] [--format text|json] [--depth N]\n"
    "                            (GPU memory profile per scope; several files are summed)\n"
    "  nanomx-trace view IN -o OUT.html [--critical-path [--step N]] [--memory CSV]...\n"
    "  nanomx-trace view BASE NEW -o OUT.html  (both on one timeline, with the diff table)\n"
    "Every command reads .json and .json.gz, object or array form, and files cut short by a "
    "crash;\n"
    "memory and --memory read the CSV of gpu_memory_profile_filename_prefix.\n"
    "Limits (every command; see docs/nanomx-trace.md):\n"
    "  --max-decompressed-mb N  gzip input decompressed size (default: 64x the file, at least\n"
    "                           256; 0: no limit)\n"
    "  --max-event-mb N         one event's JSON text (default 16)\n"
    "  --max-events N           events per file (default 500000000)\n";

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Arguments {
  std::vector<std::string> positional;
  std::optional<std::string> output;
  // summary: table (default) or json; diff, critical-path, memory: text or json
  std::string format;
  std::string sort_by = "total";
  bool ascending = false;
  std::optional<std::string> category;
  std::string by = "name";
  double threshold_pct = 0;
  std::optional<double> fail_above_pct;
  std::optional<int64_t> step;
  bool critical_path = false;
  bool per_step = false;
  std::optional<size_t> depth;      // memory --depth
  std::vector<std::string> memory;  // view --memory, in the order given
  ReadLimits limits;
};

// A flag's value: decimal digits only (no sign, spaces or suffix), at most `max`.
uint64_t parse_count(const std::string& flag, const std::string& text, uint64_t max) {
  bool digits = !text.empty() && text.size() <= 19 &&
                text.find_first_not_of("0123456789") == std::string::npos;
  uint64_t value = digits ? std::stoull(text) : 0;
  if (!digits || value > max) {
    throw UsageError(flag + " needs a whole number from 0 to " + std::to_string(max) + ", not \"" +
                     text + "\"");
  }
  return value;
}

// A percentage: a finite, non-negative decimal number ("5", "2.5").
double parse_pct(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  double value = text.empty() ? -1 : std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !(value >= 0) || value > 1e9) {
    throw UsageError(flag + " needs a percentage, a number from 0 up (such as 5 or 2.5), not \"" +
                     text + "\"");
  }
  return value;
}

Arguments parse_arguments(int argc, char** argv, const std::string& command) {
  Arguments args;
  auto value_of = [&](int& i, const std::string& flag) -> std::string {
    if (i + 1 >= argc) throw UsageError(flag + " needs a value");
    return argv[++i];
  };
  for (int i = 2; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-o" || arg == "--output") {
      args.output = value_of(i, arg);
    } else if (command == "summary" && arg == "--format") {
      args.format = value_of(i, arg);
      if (args.format != "table" && args.format != "json") {
        throw UsageError("--format must be table or json, not \"" + args.format + "\"");
      }
    } else if ((command == "diff" || command == "critical-path" || command == "memory") &&
               arg == "--format") {
      args.format = value_of(i, arg);
      if (args.format != "text" && args.format != "json") {
        throw UsageError("--format must be text or json, not \"" + args.format + "\"");
      }
    } else if (command == "diff" && arg == "--by") {
      args.by = value_of(i, arg);
      if (args.by != "name" && args.by != "category" && args.by != "step") {
        throw UsageError("--by must be name, category or step, not \"" + args.by + "\"");
      }
    } else if (command == "diff" && arg == "--threshold") {
      args.threshold_pct = parse_pct(arg, value_of(i, arg));
    } else if (command == "diff" && arg == "--fail-above") {
      args.fail_above_pct = parse_pct(arg, value_of(i, arg));
    } else if ((command == "critical-path" || command == "view") && arg == "--step") {
      args.step = static_cast<int64_t>(parse_count(arg, value_of(i, arg), uint64_t{1} << 53));
    } else if (command == "view" && arg == "--critical-path") {
      args.critical_path = true;
    } else if (command == "view" && arg == "--memory") {
      args.memory.push_back(value_of(i, arg));
    } else if (command == "memory" && arg == "--depth") {
      uint64_t depth = parse_count(arg, value_of(i, arg), 1 << 20);
      if (depth == 0) throw UsageError("--depth must be at least 1 (the top-level scopes)");
      args.depth = static_cast<size_t>(depth);
    } else if (command == "summary" && arg == "--sort-by") {
      args.sort_by = value_of(i, arg);
    } else if (command == "summary" && arg == "--per-step") {
      args.per_step = true;
    } else if (command == "summary" && arg == "--ascending") {
      args.ascending = true;
    } else if (command == "summary" && arg == "--category") {
      args.category = value_of(i, arg);
    } else if (arg == "--max-decompressed-mb") {
      // 0 lifts the cap; stored as the largest value, as the limit's "no limit".
      uint64_t mb = parse_count(arg, value_of(i, arg), uint64_t{1} << 40);
      args.limits.max_decompressed_bytes = mb == 0 ? UINT64_MAX : mb << 20;
    } else if (arg == "--max-event-mb") {
      uint64_t mb = parse_count(arg, value_of(i, arg), 4096);
      if (mb == 0) throw UsageError("--max-event-mb must be at least 1");
      args.limits.max_event_bytes = mb << 20;
    } else if (arg == "--max-events") {
      args.limits.max_events = parse_count(arg, value_of(i, arg), uint64_t{1} << 40);
    } else if (arg.size() > 1 && arg[0] == '-') {
      throw UsageError("unknown option " + arg + " for " + command);
    } else {
      args.positional.push_back(arg);
    }
  }
  return args;
}

SortKey parse_sort_key(const std::string& text) {
  if (text == "total") return SortKey::kTotal;
  if (text == "avg") return SortKey::kAvg;
  if (text == "min") return SortKey::kMin;
  if (text == "max") return SortKey::kMax;
  if (text == "count") return SortKey::kCount;
  throw UsageError("--sort-by must be one of total, avg, min, max, count; not \"" + text + "\"");
}

void report_reading_notes(const StreamInfo& trace, const TraceModel& model) {
  if (trace.truncated) {
    std::fprintf(stderr,
                 "nanomx-trace: %s: truncated (the events array is not closed): read %zu events, "
                 "ignored the last %zu bytes\n",
                 trace.path.c_str(), model.total_events, trace.ignored_bytes);
  }
  if (model.unclosed_begins) {
    std::fprintf(stderr, "nanomx-trace: %s: %zu begin events never ended (not counted)\n",
                 trace.path.c_str(), model.unclosed_begins);
  }
  if (model.unmatched_ends) {
    std::fprintf(stderr, "nanomx-trace: %s: %zu end events had no begin (not counted)\n",
                 trace.path.c_str(), model.unmatched_ends);
  }
}

// `summary --per-step`: the table of each ProfilerStep#N span in turn.
int run_summary_per_step(const Arguments& args, SortKey sort_by) {
  if (args.category) throw UsageError("--per-step does not take --category");
  StreamInfo info;
  TraceModel model = stream_model(args.positional[0], ModelOptions{}, &info);
  report_reading_notes(info, model);
  size_t outside = 0;
  std::vector<StepTable> steps = aggregate_per_step(model, &outside);
  if (steps.empty()) {
    throw TraceError(info.path +
                     ": --per-step needs steps, and this trace has none (no ProfilerStep#N events "
                     "of category ProfilerStep: record with mx.profiler.step() once per step)");
  }
  bool json = args.format == "json";
  std::string out = json ? "[" : "";
  for (size_t i = 0; i < steps.size(); ++i) {
    const StepTable& step = steps[i];
    auto rows = display_rows(step.table, sort_by, args.ascending);
    char head[160];
    if (json) {
      std::snprintf(head, sizeof head,
                    "%s\n{\"step\":\"%s\",\"start_ms\":%.6f,\"dur_ms\":%.6f,\"stats\":",
                    i ? "," : "", step.name.c_str(), static_cast<double>(step.start_ns) / 1e6,
                    static_cast<double>(step.dur_ns) / 1e6);
      out += head;
      out += format_json(rows);
      out += "}";
    } else {
      std::snprintf(head, sizeof head, "%s%s: %.6f ms, from %.6f ms\n", i ? "\n" : "",
                    step.name.c_str(), static_cast<double>(step.dur_ns) / 1e6,
                    static_cast<double>(step.start_ns) / 1e6);
      out += head;
      out += format_table(rows);
    }
  }
  if (json) out += "\n]\n";
  std::fwrite(out.data(), 1, out.size(), stdout);
  if (outside) {
    std::fprintf(stderr, "nanomx-trace: %s: %zu slices start outside every step (not shown)\n",
                 info.path.c_str(), outside);
  }
  return 0;
}

int run_summary(const Arguments& args) {
  if (args.positional.size() != 1) throw UsageError("summary takes exactly one FILE");
  SortKey sort_by = parse_sort_key(args.sort_by);
  if (args.per_step) return run_summary_per_step(args, sort_by);
  StreamInfo info;
  ModelOptions options;
  options.keep_slices = false;  // the table needs only per-name statistics
  TraceModel model = stream_model(args.positional[0], options, &info);
  report_reading_notes(info, model);
  StatTable table = aggregate(model);
  if (args.category) {
    auto found = table.find(*args.category);
    if (found == table.end()) {
      std::string known;
      for (const auto& [name, rows] : table) known += (known.empty() ? "\"" : ", \"") + name + "\"";
      throw TraceError(info.path + ": no category \"" + *args.category +
                       "\"; the trace has: " + (known.empty() ? "none" : known));
    }
    StatTable only;
    only.insert(*found);
    table.swap(only);
  }
  auto rows = display_rows(table, sort_by, args.ascending);
  std::string text =
      args.format == "json" ? format_json(rows) : format_table(rows);  // default table
  std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}

std::string format_shift(int64_t ns) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%+.6f ms", static_cast<double>(ns) / 1e6);
  return buffer;
}

int run_merge(const Arguments& args) {
  if (args.positional.empty()) throw UsageError("merge needs at least one input file");
  if (!args.output) throw UsageError("merge needs -o OUT.json");
  MergeResult result = merge_traces(args.positional, *args.output);
  std::printf("merged %zu files (%zu events) into %s; clocks aligned on %s\n", result.files.size(),
              result.events, args.output->c_str(), anchor_name(result.anchor).c_str());
  for (const MergedFile& file : result.files) {
    std::printf("  %s as %s: shifted by %s (%s), pids +%llu\n", file.path.c_str(),
                file.label.c_str(), format_shift(file.shift_ns).c_str(),
                file.anchor == ClockAnchor::kNone ? "no clock anchor in the file: not aligned"
                                                  : anchor_name(file.anchor).c_str(),
                static_cast<unsigned long long>(file.pid_base));
    if (!file.series.empty()) {
      std::printf(
          "    part %lld of the rotated series %s%s; %zu repeated metadata events dropped\n",
          static_cast<long long>(file.rotation_index), file.series.c_str(),
          file.series_starts_late
              ? " (the first part given: earlier parts are missing, deleted by max_files?)"
              : "",
          file.dropped_metadata);
    }
  }
  return 0;
}

int run_diff(const Arguments& args) {
  if (args.positional.size() != 2) throw UsageError("diff takes exactly two files: BASE NEW");
  DiffOptions options;
  options.by = args.by == "category" ? DiffBy::kCategory
               : args.by == "step"   ? DiffBy::kStep
                                     : DiffBy::kName;
  options.threshold_pct = args.threshold_pct;
  DiffResult result = diff_traces(args.positional[0], args.positional[1], options);
  std::string text = args.format == "json" ? format_diff_json(result) : format_diff_text(result);
  std::fwrite(text.data(), 1, text.size(), stdout);
  if (args.fail_above_pct && result.change_pct() > *args.fail_above_pct) {
    if (std::isinf(result.change_pct())) {
      std::fprintf(stderr,
                   "nanomx-trace: BASE has no timed events and NEW has: above --fail-above %g %%\n",
                   *args.fail_above_pct);
    } else {
      std::fprintf(stderr,
                   "nanomx-trace: NEW is %.1f %% slower than BASE, above --fail-above %g %%\n",
                   result.change_pct(), *args.fail_above_pct);
    }
    return 1;
  }
  return 0;
}

int run_critical_path(const Arguments& args) {
  if (args.positional.size() != 1) throw UsageError("critical-path takes exactly one FILE");
  CriticalPath path = critical_path_of_file(args.positional[0], args.step);
  std::string text =
      args.format == "json" ? format_critical_path_json(path) : format_critical_path_text(path);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}

int run_memory(const Arguments& args) {
  if (args.positional.empty()) throw UsageError("memory needs at least one CSV file");
  if (args.output) throw UsageError("memory prints to stdout; it takes no -o");
  MemoryProfile profile = read_memory_profiles(args.positional);
  std::string text = args.format == "json" ? format_memory_json(profile, args.depth)
                                           : format_memory_text(profile, args.depth);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}

int run_convert(const Arguments& args) {
  if (args.positional.size() != 1 || !args.output) throw UsageError("convert takes IN -o OUT");
  ConvertResult result = convert_file(args.positional[0], *args.output, isatty(2) != 0);
  std::fprintf(stderr, "%s %s (%llu bytes) -> %s (%llu bytes)\n",
               result.compressed ? "compressed" : "decompressed", args.positional[0].c_str(),
               static_cast<unsigned long long>(result.bytes_in), args.output->c_str(),
               static_cast<unsigned long long>(result.bytes_out));
  return 0;
}

int run_view(const Arguments& args) {
  if (args.positional.empty() || args.positional.size() > 2 || !args.output) {
    throw UsageError("view takes IN -o OUT.html, or BASE NEW -o OUT.html");
  }
  if (args.step && !args.critical_path) throw UsageError("--step needs --critical-path in view");
  if (args.positional.size() == 2 && args.critical_path) {
    throw UsageError("--critical-path takes one trace: view IN --critical-path -o OUT.html");
  }
  auto start = std::chrono::steady_clock::now();
  ViewOptions options;
  options.critical_path = args.critical_path;
  options.step = args.step;
  options.memory_profiles = args.memory;
  ViewResult result =
      args.positional.size() == 2
          ? write_diff_view(args.positional[0], args.positional[1], *args.output, options)
          : write_view(args.positional[0], *args.output, options);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::fprintf(stderr,
               "wrote %s: %zu events, %zu rows, %zu slices; %zu bytes (input %zu) in %.2f s\n",
               args.output->c_str(), result.events, result.rows, result.slices, result.page_bytes,
               result.input_bytes, seconds);
  if (!args.memory.empty()) {
    std::fprintf(stderr, "memory per scope: %zu scopes from %zu %s\n", result.memory_scopes,
                 args.memory.size(), args.memory.size() == 1 ? "file" : "files");
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "-h") == 0 || std::strcmp(argv[1], "--help") == 0) {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  std::string command = argv[1];
  try {
    Arguments args = parse_arguments(argc, argv, command);
    set_read_limits(args.limits);
    if (command == "summary") return run_summary(args);
    if (command == "diff") return run_diff(args);
    if (command == "critical-path") return run_critical_path(args);
    if (command == "memory") return run_memory(args);
    if (command == "merge") return run_merge(args);
    if (command == "convert") return run_convert(args);
    if (command == "view") return run_view(args);
    throw UsageError("unknown command \"" + command +
                     "\"; expected summary, diff, critical-path, memory, merge, convert or view");
  } catch (const UsageError& error) {
    std::fprintf(stderr, "nanomx-trace: %s\n%s", error.what(), kUsage);
    return 2;
  } catch (const std::bad_alloc&) {
    // The limits keep memory near the input's size; a machine with less than that ends here.
    std::fprintf(stderr,
                 "nanomx-trace: out of memory while running %s; the input needs more memory "
                 "than this machine has (see the limits in docs/nanomx-trace.md)\n",
                 command.c_str());
    return 1;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "nanomx-trace: %s\n", error.what());
    return 1;
  }
}
