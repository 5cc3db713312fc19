// A C++ user's view of the profiler: this file is compiled WITHOUT the src/ include path, so it
// sees nanomx/profiler.h (and nanomx/engine.h, which uses its NameId and mode bits) alone. It
// fails to build if the user API needs an internal header, and checks that current_config()
// hands out a snapshot rather than a reference into the profiler's guarded state.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <type_traits>

#include "nanomx/context.h"
#include "nanomx/engine.h"
#include "nanomx/profiler.h"
#include "profiler_fixture.h"

#if __has_include("profiler/hooks.h")
#error "this test must be built without src/ on the include path"
#endif

namespace prof = nanomx::profiler;

static_assert(std::is_same_v<decltype(prof::current_config()), prof::Config>,
              "current_config() returns a copy, not a reference to guarded state");
static_assert(static_cast<int>(nanomx::DeviceType::kCPUShared) == 5, "MXNet's device codes");

namespace {

class ProfilerPublicHeader : public nanomx::testing::ProfilerTest {};

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST_F(ProfilerPublicHeader, ScopeAndUserObjectsRecordThroughThePublicApiAlone) {
  const std::string file = "public_header_trace.json";
  prof::set_config({{"profile_all", "true"}, {"filename", file}, {"continuous_dump", "false"}});
  prof::set_state(prof::State::kRunning);
  { NANOMX_PROFILE_SCOPE("public scope"); }
  prof::Domain domain("public");
  prof::Task task(domain, "public task");
  task.start();
  task.stop();
  prof::set_state(prof::State::kStopped);
  prof::dump(true);
  const std::string text = read_text(file);
  EXPECT_NE(text.find("\"public scope\""), std::string::npos) << text;
  EXPECT_NE(text.find("\"public task\""), std::string::npos) << text;
  std::remove(file.c_str());
}

TEST_F(ProfilerPublicHeader, CurrentConfigIsASnapshot) {
  prof::set_config({{"filename", "first.json"}, {"continuous_dump", "false"}});
  const prof::Config before = prof::current_config();
  prof::set_config({{"filename", "second.json"}, {"continuous_dump", "false"}});
  EXPECT_EQ(before.filename, "first.json");
  EXPECT_EQ(prof::current_config().filename, "second.json");
}

TEST_F(ProfilerPublicHeader, EnginePushOptionsDefaultToImperative) {
  nanomx::engine::PushOptions options;
  EXPECT_EQ(options.profile_mode, prof::kImperative);
}

}  // namespace
