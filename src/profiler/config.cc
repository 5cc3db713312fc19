// Parsing of the profiler configuration from MXNet's string key/value form.
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string>

#include "nanomx/error.h"
#include "nanomx/profiler.h"

namespace nanomx::profiler {

namespace {

struct KeyDoc {
  const char* key;
  const char* doc;
};

// MXNet's ProfileConfigParam keys (spec §2.2) and the two nanomx additions.
const KeyDoc kKeys[] = {
    {"profile_all", "boolean, optional, default=False: profile every kind of event"},
    {"profile_symbolic", "boolean, optional: operators pushed by the symbolic executor"},
    {"profile_imperative", "boolean, optional: operators pushed imperatively"},
    {"profile_memory", "boolean, optional: allocations and frees per device"},
    {"profile_api", "boolean, optional: C API calls"},
    {"filename", "string, optional, default='profile.json': the trace file"},
    {"continuous_dump", "boolean, optional, default=True: flush the trace every dump_period"},
    {"dump_period", "float, optional, default=1: seconds between continuous flushes"},
    {"aggregate_stats", "boolean, optional, default=False: keep the table dumps() prints"},
    {"profile_process", "{'server', 'worker'}, optional, default='worker'"},
    {"gpu_memory_profile_filename_prefix",
     "string, optional, default='gpu_memory_profile': GPU memory CSV prefix"},
    {"max_buffer_mb",
     "integer, optional, default=0 (unbounded): nanomx only; bound on event buffer memory, "
     "events beyond it are dropped and counted in the trace"},
    {"duration_events",
     "{'begin_end', 'complete'}, optional, default='begin_end': nanomx only; write durations "
     "as B/E pairs (as MXNet) or as one X event"},
};

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

bool parse_bool(const std::string& key, const std::string& value) {
  std::string v = lower(value);
  if (v == "true" || v == "1") return true;
  if (v == "false" || v == "0") return false;
  fail("Invalid Parameter format for ", key, " expect boolean but value='", value,
       "' (valid: true, false, 1, 0, in any case)");
}

double parse_float(const std::string& key, const std::string& value) {
  const char* begin = value.c_str();
  char* end = nullptr;
  double v = std::strtod(begin, &end);
  if (value.empty() || end == begin) {
    NANOMX_THROW() << "Invalid Parameter format for " << key << " expect float but value='" << value
                   << "'";
  }
  if (*end != '\0') {
    NANOMX_THROW() << "Invalid Parameter format for " << key << " expect float but value='" << value
                   << "': Some trailing characters could not be parsed: '" << end << "'";
  }
  return v;
}

uint64_t parse_size(const std::string& key, const std::string& value) {
  bool digits = !value.empty() && std::all_of(value.begin(), value.end(),
                                              [](unsigned char c) { return std::isdigit(c); });
  NANOMX_CHECK(digits && value.size() <= 12)
      << "Invalid Parameter format for " << key << " expect a non-negative integer but value='"
      << value << "'";
  return std::stoull(value);
}

std::string choice_list(std::initializer_list<const char*> choices) {
  std::string out = "{";
  bool first = true;
  for (const char* c : choices) {
    out += first ? "'" : ", '";
    out += c;
    out += "'";
    first = false;
  }
  return out + "}";
}

}  // namespace

const std::vector<std::string>& config_keys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> k;
    for (const auto& d : kKeys) k.push_back(d.key);
    return k;
  }();
  return keys;
}

Config parse_config(const KeyValues& key_values) {
  Config config;
  uint32_t mode = 0;
  bool any_mode_flag = false;
  for (const auto& [key, value] : key_values) {
    if (key.size() > 4 && key.rfind("__", 0) == 0 && key.compare(key.size() - 2, 2, "__") == 0)
      continue;  // MXNet ignores __hidden__ keys
    // Named captures: clang 14 cannot capture a structured binding implicitly.
    auto mode_flag = [&, &key = key, &value = value](uint32_t bits) {
      any_mode_flag = true;
      if (parse_bool(key, value)) mode |= bits;
    };
    if (key == "profile_all") {
      mode_flag(kAllModes);
    } else if (key == "profile_symbolic") {
      mode_flag(kSymbolic);
    } else if (key == "profile_imperative") {
      mode_flag(kImperative);
    } else if (key == "profile_memory") {
      mode_flag(kMemory);
    } else if (key == "profile_api") {
      mode_flag(kApi);
    } else if (key == "filename") {
      NANOMX_CHECK(!value.empty()) << "Invalid Parameter format for filename: expect a file path "
                                      "but value='' (an empty string)";
      config.filename = value;
    } else if (key == "continuous_dump") {
      config.continuous_dump = parse_bool(key, value);
    } else if (key == "dump_period") {
      config.dump_period_seconds = parse_float(key, value);
    } else if (key == "aggregate_stats") {
      config.aggregate_stats = parse_bool(key, value);
    } else if (key == "profile_process") {
      if (value == "worker") {
        config.profile_process = ProfileProcess::kWorker;
      } else if (value == "server") {
        config.profile_process = ProfileProcess::kServer;
      } else {
        NANOMX_THROW() << "Invalid Input: '" << value
                       << "', valid values are: " << choice_list({"server", "worker"})
                       << " (key profile_process)";
      }
    } else if (key == "gpu_memory_profile_filename_prefix") {
      config.gpu_memory_profile_filename_prefix = value;
    } else if (key == "max_buffer_mb") {
      config.max_buffer_bytes = parse_size(key, value) << 20;
    } else if (key == "duration_events") {
      if (value == "begin_end") {
        config.duration_events = DurationEvents::kBeginEnd;
      } else if (value == "complete") {
        config.duration_events = DurationEvents::kComplete;
      } else {
        NANOMX_THROW() << "Invalid Input: '" << value
                       << "', valid values are: " << choice_list({"begin_end", "complete"})
                       << " (key duration_events)";
      }
    } else {
      std::string message = "Cannot find argument '" + key + "', Possible Arguments:\n";
      message += "----------------\n";
      for (const auto& d : kKeys) message += std::string(d.key) + " : " + d.doc + "\n";
      throw Error(message);
    }
  }
  // The guide's meaning (DESIGN.md): the mode is the OR of the flags passed as true; with no
  // flag at all it is MXNet's default, symbolic|api|memory.
  config.mode = any_mode_flag ? mode : kDefaultMode;
  NANOMX_CHECK(!config.continuous_dump || config.dump_period_seconds > 0)
      << "Check failed: !continuous_dump || dump_period > 0 (dump_period="
      << config.dump_period_seconds << " must be positive while continuous_dump is on)";
  return config;
}

MarkerScope parse_marker_scope(std::string_view text) {
  if (text == "global") return MarkerScope::kGlobal;
  if (text == "process") return MarkerScope::kProcess;
  if (text == "thread") return MarkerScope::kThread;
  if (text == "task") return MarkerScope::kTask;
  if (text == "marker") return MarkerScope::kMarker;
  fail("Invalid Input: '", text,
       "', valid values are: ", choice_list({"global", "marker", "process", "task", "thread"}));
}

}  // namespace nanomx::profiler
