// Parsing of the profiler configuration from MXNet's string key/value form.
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <initializer_list>
#include <iterator>
#include <string>
#include <utility>

#include "nanomx/error.h"
#include "nanomx/profiler.h"

namespace nanomx::profiler {

namespace {

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

// The accepted ranges, printed in every error about the key.
constexpr double kMinDumpPeriod = 0.001;    // 1 ms: shorter periods only burn a core
constexpr double kMaxDumpPeriod = 86400.0;  // 1 day: longer ones overflow the dump thread's wait
constexpr const char* kDumpPeriodRange = "[0.001, 86400] seconds";

// max_file_mb: fractions allow small files (tests, tiny runs); 0 turns rotation off.
constexpr double kMinFileMb = 0.01;
constexpr double kMaxFileMb = 1048576.0;  // 1 TiB
constexpr const char* kMaxFileMbRange = "0 (off) or [0.01, 1048576] MiB";
// Step counts and max_files: far beyond any real run, small enough for 32 bits.
constexpr uint64_t kMaxScheduleValue = 1000000000;

// Physical memory in MiB (sysconf): the largest max_buffer_mb that can ever be honoured.
uint64_t physical_memory_mb() {
  long pages = sysconf(_SC_PHYS_PAGES);
  long page_size = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_size <= 0) return uint64_t{1} << 20;  // unknown: 1 TiB
  return (static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size)) >> 20;
}

// Strict decimal: an optional sign, digits, an optional fraction and exponent, nothing else
// (no spaces, no hex, no inf/nan), as a config file or a Python str(float) writes it. strtod
// alone accepts " 1", "0x10" and "inf", which the dump thread then misreads.
bool strict_decimal(const std::string& value) {
  size_t i = 0;
  const size_t n = value.size();
  auto digits = [&] {
    size_t start = i;
    while (i < n && std::isdigit(static_cast<unsigned char>(value[i]))) ++i;
    return i - start;
  };
  if (i < n && (value[i] == '+' || value[i] == '-')) ++i;
  size_t mantissa = digits();
  if (i < n && value[i] == '.') {
    ++i;
    mantissa += digits();
  }
  if (mantissa == 0) return false;
  if (i < n && (value[i] == 'e' || value[i] == 'E')) {
    ++i;
    if (i < n && (value[i] == '+' || value[i] == '-')) ++i;
    if (digits() == 0) return false;
  }
  return i == n;
}

// MXNet's message shapes ("Invalid Parameter format for KEY expect float but value='V'", and
// its trailing-characters variant: docs/mxnet-compat.md#configuration) followed by what is
// accepted.
double parse_float(const std::string& key, const std::string& value, const char* range) {
  const char* begin = value.c_str();
  char* end = nullptr;
  double v = value.empty() ? 0.0 : std::strtod(begin, &end);
  if (value.empty() || end == begin) {
    NANOMX_THROW() << "Invalid Parameter format for " << key << " expect float but value='" << value
                   << "' (expected a finite decimal number in " << range << ")";
  }
  if (*end != '\0') {
    NANOMX_THROW() << "Invalid Parameter format for " << key << " expect float but value='" << value
                   << "': Some trailing characters could not be parsed: '" << end
                   << "' (expected a finite decimal number in " << range << ")";
  }
  NANOMX_CHECK(strict_decimal(value) && std::isfinite(v))
      << "Invalid Parameter format for " << key << " expect float but value='" << value
      << "' (expected a finite decimal number in " << range << ", without spaces, hex, inf or nan)";
  return v;
}

uint64_t parse_size(const std::string& key, const std::string& value, uint64_t min, uint64_t max) {
  bool digits = !value.empty() && std::all_of(value.begin(), value.end(),
                                              [](unsigned char c) { return std::isdigit(c); });
  NANOMX_CHECK(digits && value.size() <= 12)
      << "Invalid Parameter format for " << key << " expect a non-negative integer but value='"
      << value << "' (expected decimal digits only, in [" << min << ", " << max << "])";
  uint64_t v = std::stoull(value);
  NANOMX_CHECK(v >= min && v <= max)
      << "Invalid Parameter value for " << key << ": value='" << value
      << "' is outside the accepted range [" << min << ", " << max << "]";
  return v;
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

// What parse_config builds: the configuration, plus the mode flags. As MXNet's
// ProfileConfigParam (docs/mxnet-compat.md#recording-modes): every profile_<kind> flag not
// passed is true, so a call that passes only some flags records every kind; a kind is left out
// only by passing its flag as false, and profile_all=true records every kind whatever the
// others say.
struct Parsed {
  Config config;
  uint32_t kinds = kSymbolic | kImperative | kApi | kMemory;  // the flags, defaults true
  bool all = false;                                           // profile_all
};

void mode_flag(uint32_t bits, const std::string& key, const std::string& value, Parsed* out) {
  if (parse_bool(key, value)) {
    out->kinds |= bits;
  } else {
    out->kinds &= ~bits;
  }
}

template <typename Enum, size_t N>
Enum parse_choice(const std::string& key, const std::string& value,
                  const std::pair<const char*, Enum> (&choices)[N],
                  std::initializer_list<const char*> listed) {
  for (const auto& [name, choice] : choices)
    if (value == name) return choice;
  fail("Invalid Input: '", value, "', valid values are: ", choice_list(listed), " (key ", key, ")");
}

// One row per key: its name, its documentation (the unknown-key error lists them, as MXNet's
// ProfileConfigParam) and how its value is parsed into the configuration. MXNet's keys
// (docs/mxnet-compat.md) and the three nanomx additions, in the order they are documented.
struct KeyRow {
  const char* key;
  const char* doc;
  void (*apply)(const std::string& key, const std::string& value, Parsed* out);
};

const KeyRow kKeys[] = {
    {"profile_all", "boolean, optional, default=False: profile every kind of event",
     [](const std::string& k, const std::string& v, Parsed* out) { out->all = parse_bool(k, v); }},
    {"profile_symbolic",
     "boolean, optional, default=True: operators pushed by the symbolic executor",
     [](const std::string& k, const std::string& v, Parsed* out) {
       mode_flag(kSymbolic, k, v, out);
     }},
    {"profile_imperative", "boolean, optional, default=True: operators pushed imperatively",
     [](const std::string& k, const std::string& v, Parsed* out) {
       mode_flag(kImperative, k, v, out);
     }},
    {"profile_memory", "boolean, optional, default=True: allocations and frees per device",
     [](const std::string& k, const std::string& v, Parsed* out) {
       mode_flag(kMemory, k, v, out);
     }},
    {"profile_api", "boolean, optional, default=True: C API calls",
     [](const std::string& k, const std::string& v, Parsed* out) { mode_flag(kApi, k, v, out); }},
    {"filename", "string, optional, default='profile.json': the trace file",
     [](const std::string&, const std::string& v, Parsed* out) {
       NANOMX_CHECK(!v.empty()) << "Invalid Parameter format for filename: expect a file path "
                                   "but value='' (an empty string)";
       out->config.filename = v;
     }},
    {"continuous_dump", "boolean, optional, default=True: flush the trace every dump_period",
     [](const std::string& k, const std::string& v, Parsed* out) {
       out->config.continuous_dump = parse_bool(k, v);
     }},
    {"dump_period", "float, optional, default=1: seconds between continuous flushes",
     [](const std::string& k, const std::string& v, Parsed* out) {
       out->config.dump_period_seconds = parse_float(k, v, kDumpPeriodRange);
     }},
    {"aggregate_stats", "boolean, optional, default=False: keep the table dumps() prints",
     [](const std::string& k, const std::string& v, Parsed* out) {
       out->config.aggregate_stats = parse_bool(k, v);
     }},
    {"profile_process", "{'server', 'worker'}, optional, default='worker'",
     [](const std::string& k, const std::string& v, Parsed* out) {
       static const std::pair<const char*, ProfileProcess> kChoices[] = {
           {"worker", ProfileProcess::kWorker}, {"server", ProfileProcess::kServer}};
       out->config.profile_process = parse_choice(k, v, kChoices, {"server", "worker"});
     }},
    {"gpu_memory_profile_filename_prefix",
     "string, optional, default='gpu_memory_profile': GPU memory CSV prefix",
     [](const std::string&, const std::string& v, Parsed* out) {
       out->config.gpu_memory_profile_filename_prefix = v;
     }},
    {"max_buffer_mb",
     "integer, optional, default=256: nanomx only; bound in MiB on event buffer memory, "
     "1 to physical memory; events beyond it are dropped and counted in the trace",
     [](const std::string& k, const std::string& v, Parsed* out) {
       out->config.max_buffer_bytes = parse_size(k, v, 1, physical_memory_mb()) << 20;
     }},
    {"duration_events",
     "{'begin_end', 'complete'}, optional, default='begin_end': nanomx only; write durations "
     "as B/E pairs (as MXNet) or as one X event",
     [](const std::string& k, const std::string& v, Parsed* out) {
       static const std::pair<const char*, DurationEvents> kChoices[] = {
           {"begin_end", DurationEvents::kBeginEnd}, {"complete", DurationEvents::kComplete}};
       out->config.duration_events = parse_choice(k, v, kChoices, {"begin_end", "complete"});
     }},
    {"fsync",
     "boolean, optional, default=False: nanomx only; sync the trace to the disk at every "
     "flush, so a committed flush also survives a power loss",
     [](const std::string& k, const std::string& v, Parsed* out) {
       out->config.fsync = parse_bool(k, v);
     }},
    {"max_file_mb",
     "float, optional, default=0: nanomx only; finish the trace file when it reaches this many "
     "MiB and go on in <stem>.1.json, <stem>.2.json, ... (0: one file)",
     [](const std::string& k, const std::string& v, Parsed* out) {
       const double mb = parse_float(k, v, kMaxFileMbRange);
       NANOMX_CHECK(mb == 0 || (mb >= kMinFileMb && mb <= kMaxFileMb))
           << "Invalid Parameter value for " << k << ": value='" << v
           << "' is outside the accepted range " << kMaxFileMbRange;
       out->config.max_file_bytes = static_cast<uint64_t>(mb * 1048576.0);
     }},
    {"max_files",
     "integer, optional, default=0: nanomx only; with max_file_mb, keep only the last this "
     "many files of the series (0: keep all)",
     [](const std::string& k, const std::string& v, Parsed* out) {
       out->config.max_files = static_cast<uint32_t>(parse_size(k, v, 0, kMaxScheduleValue));
     }},
    {"schedule_wait",
     "integer, optional, default=0: nanomx only; steps off at the start of each schedule cycle",
     [](const std::string& k, const std::string& v, Parsed* out) {
       out->config.schedule.wait = static_cast<uint32_t>(parse_size(k, v, 0, kMaxScheduleValue));
     }},
    {"schedule_warmup",
     "integer, optional, default=0: nanomx only; steps recorded and discarded before the active "
     "steps of each cycle",
     [](const std::string& k, const std::string& v, Parsed* out) {
       out->config.schedule.warmup = static_cast<uint32_t>(parse_size(k, v, 0, kMaxScheduleValue));
     }},
    {"schedule_active",
     "integer, optional, default=0: nanomx only; steps kept in each cycle's file "
     "<stem>.step<N>.json (0: no schedule)",
     [](const std::string& k, const std::string& v, Parsed* out) {
       out->config.schedule.active = static_cast<uint32_t>(parse_size(k, v, 0, kMaxScheduleValue));
     }},
    {"schedule_repeat",
     "integer, optional, default=0: nanomx only; cycles to run (0: until stopped)",
     [](const std::string& k, const std::string& v, Parsed* out) {
       out->config.schedule.repeat = static_cast<uint32_t>(parse_size(k, v, 0, kMaxScheduleValue));
     }},
    {"schedule_skip_first",
     "integer, optional, default=0: nanomx only; steps off before the first cycle",
     [](const std::string& k, const std::string& v, Parsed* out) {
       out->config.schedule.skip_first =
           static_cast<uint32_t>(parse_size(k, v, 0, kMaxScheduleValue));
     }},
};

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
  Parsed parsed;
  for (const auto& [key, value] : key_values) {
    if (key.size() > 4 && key.rfind("__", 0) == 0 && key.compare(key.size() - 2, 2, "__") == 0)
      continue;  // MXNet ignores __hidden__ keys
    const KeyRow* row = std::find_if(std::begin(kKeys), std::end(kKeys),
                                     [&key = key](const KeyRow& r) { return key == r.key; });
    if (row == std::end(kKeys)) {
      std::string message = "Cannot find argument '" + key + "', Possible Arguments:\n";
      message += "----------------\n";
      for (const auto& d : kKeys) message += std::string(d.key) + " : " + d.doc + "\n";
      throw Error(message);
    }
    row->apply(key, value, &parsed);
  }
  Config config = std::move(parsed.config);
  config.mode = parsed.all ? kAllModes : parsed.kinds;
  NANOMX_CHECK(!config.continuous_dump || config.dump_period_seconds > 0)
      << "Check failed: !continuous_dump || dump_period > 0 (dump_period="
      << config.dump_period_seconds << " must be positive while continuous_dump is on; accepted "
      << kDumpPeriodRange << ")";
  const Config::Schedule& schedule = config.schedule;
  NANOMX_CHECK(schedule.enabled() || (schedule.wait == 0 && schedule.warmup == 0 &&
                                      schedule.repeat == 0 && schedule.skip_first == 0))
      << "Invalid Parameter value for schedule_active: 0 (no schedule) while schedule_wait="
      << schedule.wait << ", schedule_warmup=" << schedule.warmup
      << ", schedule_repeat=" << schedule.repeat << ", schedule_skip_first=" << schedule.skip_first
      << " are set; expected schedule_active >= 1 with them";
  NANOMX_CHECK(config.max_files == 0 || config.max_file_bytes > 0)
      << "Invalid Parameter value for max_files: " << config.max_files
      << " without max_file_mb (max_files bounds the files of a rotating series; set "
         "max_file_mb > 0 too)";
  // The period only matters while continuous_dump is on (MXNet accepts any period without it).
  NANOMX_CHECK(!config.continuous_dump || (config.dump_period_seconds >= kMinDumpPeriod &&
                                           config.dump_period_seconds <= kMaxDumpPeriod))
      << "Invalid Parameter value for dump_period: " << config.dump_period_seconds
      << " is outside the accepted range " << kDumpPeriodRange;
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
