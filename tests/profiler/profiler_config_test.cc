// Configuration parsing: mode mapping, value parsing and every error message
// (docs/mxnet-compat.md#configuration, with its departure for the mode flags).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <limits>
#include <thread>

#include "nanomx/error.h"
#include "nanomx/profiler.h"
#include "profiler_fixture.h"

namespace prof = nanomx::profiler;
using ::testing::HasSubstr;

namespace {

class ProfilerConfig : public nanomx::testing::ProfilerTest {};

std::string error_of(const prof::KeyValues& kv) {
  try {
    prof::parse_config(kv);
  } catch (const nanomx::Error& e) {
    return e.what();
  }
  return "";
}

// As MXNet's ProfileConfigParam: every profile_<kind> flag not passed is true (so a call that
// names only some kinds records every kind), false leaves a kind out, profile_all=true records
// everything. The process default before any config call stays 13 (ModeFromEnvironment).
TEST_F(ProfilerConfig, ModeFlagsDefaultToTrueAsMxnet) {
  const std::vector<std::pair<prof::KeyValues, uint32_t>> table = {
      {{}, 15u},
      {{{"filename", "x.json"}}, 15u},
      {{{"profile_symbolic", "True"}}, 15u},
      {{{"profile_symbolic", "true"}, {"profile_api", "true"}}, 15u},
      {{{"profile_imperative", "False"}}, 13u},
      {{{"profile_api", "0"}, {"profile_memory", "false"}}, 3u},
      // Only symbolic operators: pass the others as False.
      {{{"profile_symbolic", "true"},
        {"profile_imperative", "false"},
        {"profile_api", "false"},
        {"profile_memory", "false"}},
       1u},
      {{{"profile_imperative", "true"}, {"profile_memory", "false"}}, 7u},
      {{{"profile_memory", "FALSE"}, {"profile_memory", "TRUE"}}, 15u},  // the last one counts
  };
  for (const auto& [key_values, mode] : table) {
    std::string call;
    for (const auto& [k, v] : key_values) call += k + "=" + v + " ";
    EXPECT_EQ(prof::parse_config(key_values).mode, mode) << "set_config(" << call << ")";
  }
}

TEST_F(ProfilerConfig, AllFourFalseGivesZero) {
  EXPECT_EQ(prof::parse_config({{"profile_symbolic", "False"},
                                {"profile_imperative", "False"},
                                {"profile_memory", "0"},
                                {"profile_api", "false"}})
                .mode,
            0u);
}

TEST_F(ProfilerConfig, ProfileAllOverridesEverything) {
  EXPECT_EQ(prof::parse_config({{"profile_all", "True"}}).mode, 15u);
  EXPECT_EQ(prof::parse_config({{"profile_symbolic", "False"}, {"profile_all", "true"}}).mode, 15u);
  EXPECT_EQ(prof::parse_config({{"profile_all", "false"}}).mode, 15u);  // the others stay true
  EXPECT_EQ(prof::parse_config({{"profile_all", "false"}, {"profile_api", "false"}}).mode, 11u);
}

TEST_F(ProfilerConfig, DefaultsOfTheOtherKeys) {
  prof::Config c = prof::parse_config({});
  EXPECT_EQ(c.filename, "profile.json");
  EXPECT_TRUE(c.continuous_dump);
  EXPECT_DOUBLE_EQ(c.dump_period_seconds, 1.0);
  EXPECT_FALSE(c.aggregate_stats);
  EXPECT_EQ(c.profile_process, prof::ProfileProcess::kWorker);
  EXPECT_EQ(c.gpu_memory_profile_filename_prefix, "gpu_memory_profile");
  EXPECT_EQ(c.max_buffer_bytes, uint64_t{256} << 20);
  EXPECT_EQ(c.duration_events, prof::DurationEvents::kBeginEnd);
}

TEST_F(ProfilerConfig, AllElevenMxnetKeysAreAccepted) {
  prof::Config c = prof::parse_config({{"profile_all", "False"},
                                       {"profile_symbolic", "True"},
                                       {"profile_imperative", "False"},
                                       {"profile_memory", "False"},
                                       {"profile_api", "True"},
                                       {"filename", "t.json"},
                                       {"continuous_dump", "False"},
                                       {"dump_period", "0.25"},
                                       {"aggregate_stats", "True"},
                                       {"profile_process", "server"},
                                       {"gpu_memory_profile_filename_prefix", "gpu"}});
  EXPECT_EQ(c.mode, 5u);
  EXPECT_EQ(c.filename, "t.json");
  EXPECT_FALSE(c.continuous_dump);
  EXPECT_DOUBLE_EQ(c.dump_period_seconds, 0.25);
  EXPECT_TRUE(c.aggregate_stats);
  EXPECT_EQ(c.profile_process, prof::ProfileProcess::kServer);
  EXPECT_EQ(c.gpu_memory_profile_filename_prefix, "gpu");
}

TEST_F(ProfilerConfig, NanomxKeys) {
  prof::Config c = prof::parse_config({{"max_buffer_mb", "3"}, {"duration_events", "complete"}});
  EXPECT_EQ(c.max_buffer_bytes, 3u << 20);
  EXPECT_EQ(c.duration_events, prof::DurationEvents::kComplete);
  EXPECT_THAT(error_of({{"max_buffer_mb", "-1"}}), HasSubstr("max_buffer_mb"));
  EXPECT_THAT(error_of({{"duration_events", "x"}}),
              HasSubstr("valid values are: {'begin_end', 'complete'}"));
}

TEST_F(ProfilerConfig, HiddenDunderKeysAreIgnored) {
  EXPECT_EQ(prof::parse_config({{"__hidden__", "whatever"}}).mode, 15u);
  EXPECT_NE(error_of({{"____", "x"}}), "");  // too short to be a hidden key
}

TEST_F(ProfilerConfig, UnknownKeyNamesTheKeyAndTheValidKeys) {
  std::string e = error_of({{"profile_everything", "True"}});
  EXPECT_THAT(e, HasSubstr("Cannot find argument 'profile_everything', Possible Arguments:\n"
                           "----------------\n"));
  for (const auto& key : prof::config_keys()) EXPECT_THAT(e, HasSubstr(key + " : "));
}

TEST_F(ProfilerConfig, BadBoolNamesKeyValueAndChoices) {
  EXPECT_EQ(error_of({{"profile_api", "yes"}}),
            "Invalid Parameter format for profile_api expect boolean but value='yes' (valid: "
            "true, false, 1, 0, in any case)");
  EXPECT_THAT(error_of({{"aggregate_stats", ""}}), HasSubstr("aggregate_stats"));
}

TEST_F(ProfilerConfig, BadFloat) {
  EXPECT_EQ(error_of({{"dump_period", "soon"}}),
            "Invalid Parameter format for dump_period expect float but value='soon' (expected a "
            "finite decimal number in [0.001, 86400] seconds)");
  EXPECT_THAT(error_of({{"dump_period", "1.5s"}}),
              HasSubstr("Some trailing characters could not be parsed: 's'"));
}

// strtod alone takes all of these; each would reach the dump thread (docs/mxnet-compat.md).
TEST_F(ProfilerConfig, FloatsAreParsedStrictly) {
  for (const char* bad : {"inf", "-inf", "nan", "NAN", "infinity", "0x10", "0X1p3", " 1", "1 ",
                          "\t1", "1\n", "+", ".", "1e", "1e+", "--1", "1.5.2", ""}) {
    std::string e = error_of({{"dump_period", bad}});
    EXPECT_THAT(e, HasSubstr("Invalid Parameter format for dump_period expect float but value='" +
                             std::string(bad) + "'"))
        << "value '" << bad << "'";
    EXPECT_THAT(e, HasSubstr("[0.001, 86400] seconds")) << "value '" << bad << "'";
  }
  // The spellings Python's str(float) and config files use stay accepted.
  for (const char* good : {"1", "0.5", ".5", "5.", "+2", "1e-3", "1E2", "2.5e+1"})
    EXPECT_EQ(error_of({{"dump_period", good}}), "") << "value '" << good << "'";
}

TEST_F(ProfilerConfig, DumpPeriodMustBeWithinOneMillisecondAndOneDay) {
  for (const char* bad : {"1e300", "1e-9", "0.0009", "86401", "1e5"}) {
    std::string e = error_of({{"dump_period", bad}});
    EXPECT_THAT(e, HasSubstr("dump_period")) << bad;
    EXPECT_THAT(e, HasSubstr("outside the accepted range [0.001, 86400] seconds")) << bad;
  }
  EXPECT_THAT(error_of({{"dump_period", "-1"}}),
              HasSubstr("Check failed: !continuous_dump || dump_period > 0"));
  EXPECT_THAT(error_of({{"dump_period", "-1"}}), HasSubstr("[0.001, 86400] seconds"));
  EXPECT_EQ(prof::parse_config({{"dump_period", "0.001"}}).dump_period_seconds, 0.001);
  EXPECT_EQ(prof::parse_config({{"dump_period", "86400"}}).dump_period_seconds, 86400.0);
  // Without continuous dump the period is unused (as MXNet), but it must still be a number.
  EXPECT_EQ(error_of({{"dump_period", "1e300"}, {"continuous_dump", "false"}}), "");
  EXPECT_NE(error_of({{"dump_period", "inf"}, {"continuous_dump", "false"}}), "");
}

TEST_F(ProfilerConfig, IntegersAreParsedStrictlyWithinOneMiBAndPhysicalMemory) {
  for (const char* bad : {"0x10", " 1", "1 ", "+1", "-1", "1.0", "1e3", "inf", "nan", ""}) {
    std::string e = error_of({{"max_buffer_mb", bad}});
    EXPECT_THAT(e, HasSubstr("Invalid Parameter format for max_buffer_mb expect a non-negative "
                             "integer but value='" +
                             std::string(bad) + "'"))
        << "value '" << bad << "'";
    EXPECT_THAT(e, HasSubstr("in [1, ")) << "value '" << bad << "'";
  }
  const uint64_t physical_mb = (static_cast<uint64_t>(sysconf(_SC_PHYS_PAGES)) *
                                static_cast<uint64_t>(sysconf(_SC_PAGESIZE))) >>
                               20;
  const std::string range = "[1, " + std::to_string(physical_mb) + "]";
  EXPECT_THAT(error_of({{"max_buffer_mb", "0"}}), HasSubstr("outside the accepted range " + range));
  EXPECT_THAT(error_of({{"max_buffer_mb", std::to_string(physical_mb + 1)}}),
              HasSubstr("outside the accepted range " + range));
  EXPECT_THAT(error_of({{"max_buffer_mb", "999999999999"}}), HasSubstr(range));
  EXPECT_EQ(prof::parse_config({{"max_buffer_mb", std::to_string(physical_mb)}}).max_buffer_bytes,
            physical_mb << 20);
}

std::string set_config_error(const prof::KeyValues& kv) {
  try {
    prof::set_config(kv);
  } catch (const nanomx::Error& e) {
    return e.what();
  }
  return "";
}

TEST_F(ProfilerConfig, UncreatableFilenameIsRefusedAtSetConfig) {
  EXPECT_THAT(set_config_error({{"filename", "missing_dir/t.json"}}),
              HasSubstr("cannot create the trace file 'missing_dir/t.json': No such file or "
                        "directory"));
  std::filesystem::create_directory("a_dir");
  EXPECT_THAT(set_config_error({{"filename", "a_dir"}}),
              HasSubstr("cannot create the trace file 'a_dir': Is a directory"));
  // A refused config changes nothing.
  EXPECT_EQ(prof::current_config().filename, "profile.json");
  // The check leaves no file behind; an existing file is kept until the config deletes it.
  EXPECT_EQ(set_config_error({{"filename", "fresh.json"}}), "");
  EXPECT_FALSE(std::filesystem::exists("fresh.json"));
  std::ofstream("old.json") << "{}";
  EXPECT_EQ(set_config_error({{"filename", "old.json"}}), "");
  EXPECT_FALSE(std::filesystem::exists("old.json"));  // deleted by the config, as MXNet
  // parse_config never touches the file system (the config fuzzer calls it).
  EXPECT_EQ(error_of({{"filename", "missing_dir/t.json"}}), "");
}

TEST_F(ProfilerConfig, UnwritableDirectoryIsRefusedAtSetConfig) {
  if (geteuid() == 0) GTEST_SKIP() << "root writes anywhere";
  std::filesystem::create_directory("locked");
  std::filesystem::permissions(
      "locked", std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
  EXPECT_THAT(set_config_error({{"filename", "locked/t.json"}}),
              HasSubstr("cannot create the trace file 'locked/t.json': Permission denied"));
  std::filesystem::permissions("locked", std::filesystem::perms::owner_all);
}

TEST_F(ProfilerConfig, UnwritableFileInAProcFilesystemIsRefused) {
  // Not creatable even by root: /proc refuses new files.
  EXPECT_THAT(set_config_error({{"filename", "/proc/nanomx_trace.json"}}),
              HasSubstr("cannot create the trace file '/proc/nanomx_trace.json': "));
}

// The hang the issue measured: a bad period was accepted, the dump thread spun and stop never
// returned. Now the config is refused, and a run with the previous config stops at once.
TEST_F(ProfilerConfig, BadDumpPeriodThenStopReturns) {
  prof::set_config({{"filename", "hang.json"}, {"dump_period", "0.01"}});
  prof::set_state(prof::State::kRunning);
  for (const char* bad : {"inf", "1e300", "1e-9", "nan"})
    EXPECT_NE(set_config_error({{"filename", "hang.json"}, {"dump_period", bad}}), "") << bad;
  auto start = std::chrono::steady_clock::now();
  prof::set_state(prof::State::kStopped);
  prof::dump(true);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

// apply_config takes a Config as it is: the dump thread clamps a period it cannot wait for.
TEST_F(ProfilerConfig, ApplyConfigWithAnInfinitePeriodDoesNotSpin) {
  prof::Config config = prof::parse_config({{"filename", "inf.json"}});
  config.dump_period_seconds = std::numeric_limits<double>::infinity();
  prof::apply_config(config);
  prof::set_state(prof::State::kRunning);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  auto start = std::chrono::steady_clock::now();
  prof::set_state(prof::State::kStopped);
  prof::dump(true);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

TEST_F(ProfilerConfig, BadEnum) {
  EXPECT_THAT(error_of({{"profile_process", "client"}}),
              HasSubstr("Invalid Input: 'client', valid values are: {'server', 'worker'}"));
}

TEST_F(ProfilerConfig, ContinuousDumpNeedsPositivePeriod) {
  EXPECT_THAT(error_of({{"dump_period", "0"}}),
              HasSubstr("Check failed: !continuous_dump || dump_period > 0"));
  EXPECT_EQ(error_of({{"dump_period", "0"}, {"continuous_dump", "false"}}), "");
}

TEST_F(ProfilerConfig, EmptyFilenameIsRefused) {
  EXPECT_THAT(error_of({{"filename", ""}}), HasSubstr("filename"));
}

TEST_F(ProfilerConfig, ABadCallChangesNothing) {
  prof::set_config({{"profile_api", "false"}, {"filename", "kept.json"}});
  EXPECT_THROW(prof::set_config({{"filename", "other.json"}, {"profile_api", "maybe"}}),
               nanomx::Error);
  EXPECT_EQ(prof::mode(), 11u);
  EXPECT_EQ(prof::current_config().filename, "kept.json");
}

TEST_F(ProfilerConfig, MarkerScopes) {
  EXPECT_EQ(prof::parse_marker_scope("global"), prof::MarkerScope::kGlobal);
  EXPECT_EQ(prof::parse_marker_scope("process"), prof::MarkerScope::kProcess);
  EXPECT_EQ(prof::parse_marker_scope("thread"), prof::MarkerScope::kThread);
  EXPECT_EQ(prof::parse_marker_scope("task"), prof::MarkerScope::kTask);
  EXPECT_EQ(prof::parse_marker_scope("marker"), prof::MarkerScope::kMarker);
  try {
    prof::parse_marker_scope("galaxy");
    FAIL();
  } catch (const nanomx::Error& e) {
    EXPECT_STREQ(e.what(),
                 "Invalid Input: 'galaxy', valid values are: {'global', 'marker', 'process', "
                 "'task', 'thread'}");
  }
}

// parse_config is driven by its key table: every documented key has a parser that sets its
// field, and each key's value reaches the right field.
TEST_F(ProfilerConfig, EveryDocumentedKeyParsesIntoItsField) {
  const std::vector<std::pair<std::string, std::string>> samples = {
      {"profile_all", "false"},
      {"profile_symbolic", "true"},
      {"profile_imperative", "false"},
      {"profile_memory", "true"},
      {"profile_api", "false"},
      {"filename", "table.json"},
      {"continuous_dump", "false"},
      {"dump_period", "2.5"},
      {"aggregate_stats", "true"},
      {"profile_process", "server"},
      {"gpu_memory_profile_filename_prefix", "gpu_prefix"},
      {"max_buffer_mb", "3"},
      {"duration_events", "complete"},
      {"fsync", "true"},
      {"max_file_mb", "1.5"},
      {"max_files", "4"},
      {"schedule_wait", "1"},
      {"schedule_warmup", "2"},
      {"schedule_active", "3"},
      {"schedule_repeat", "5"},
      {"schedule_skip_first", "6"},
  };
  ASSERT_EQ(prof::config_keys().size(), samples.size());
  for (size_t i = 0; i < samples.size(); ++i) EXPECT_EQ(prof::config_keys()[i], samples[i].first);
  const prof::Config c = prof::parse_config(samples);
  EXPECT_EQ(c.mode, prof::kSymbolic | prof::kMemory);
  EXPECT_EQ(c.filename, "table.json");
  EXPECT_FALSE(c.continuous_dump);
  EXPECT_DOUBLE_EQ(c.dump_period_seconds, 2.5);
  EXPECT_TRUE(c.aggregate_stats);
  EXPECT_EQ(c.profile_process, prof::ProfileProcess::kServer);
  EXPECT_EQ(c.gpu_memory_profile_filename_prefix, "gpu_prefix");
  EXPECT_EQ(c.max_buffer_bytes, 3u << 20);
  EXPECT_EQ(c.duration_events, prof::DurationEvents::kComplete);
  EXPECT_TRUE(c.fsync);
  EXPECT_FALSE(prof::parse_config({}).fsync);
  EXPECT_EQ(c.max_file_bytes, 3u << 19);
  EXPECT_EQ(c.max_files, 4u);
  EXPECT_EQ(c.schedule.wait, 1u);
  EXPECT_EQ(c.schedule.warmup, 2u);
  EXPECT_EQ(c.schedule.active, 3u);
  EXPECT_EQ(c.schedule.repeat, 5u);
  EXPECT_EQ(c.schedule.skip_first, 6u);
  EXPECT_TRUE(c.schedule.enabled());
  EXPECT_FALSE(prof::parse_config({}).schedule.enabled());
  EXPECT_EQ(prof::parse_config({}).max_file_bytes, 0u);
}

// Schedule and rotation keys: bad combinations name the keys and what is expected.
TEST_F(ProfilerConfig, ScheduleAndRotationKeysAreChecked) {
  auto message = [](const prof::KeyValues& kv) {
    try {
      prof::parse_config(kv);
    } catch (const nanomx::Error& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  EXPECT_NE(message({{"schedule_wait", "2"}}).find("expected schedule_active >= 1"),
            std::string::npos);
  EXPECT_NE(message({{"max_files", "2"}}).find("without max_file_mb"), std::string::npos);
  EXPECT_NE(message({{"max_file_mb", "0.001"}}).find("[0.01, 1048576] MiB"), std::string::npos);
  EXPECT_NE(message({{"max_file_mb", "-1"}}).find("max_file_mb"), std::string::npos);
  EXPECT_NE(message({{"schedule_active", "x"}}).find("schedule_active"), std::string::npos);
  EXPECT_EQ(message({{"max_file_mb", "0"}, {"schedule_active", "1"}}), "(accepted)");
}

TEST_F(ProfilerConfig, ChoiceKeysNameTheKeyAndTheChoices) {
  try {
    prof::parse_config({{"duration_events", "half"}});
    FAIL();
  } catch (const nanomx::Error& e) {
    EXPECT_STREQ(e.what(),
                 "Invalid Input: 'half', valid values are: {'begin_end', 'complete'} (key "
                 "duration_events)");
  }
}

}  // namespace
