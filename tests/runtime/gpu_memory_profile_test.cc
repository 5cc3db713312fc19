// The GPU memory profile's table and CSV (docs/cuda.md): entries carry the profiler scope at
// allocation, frees remove them, and the file has MXNet's quoted columns with rows sorted by
// attribute. The table is fed directly here, so this runs without a GPU.
#include "storage/gpu_memory_profile.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "nanomx/profiler.h"

namespace nanomx {
namespace {

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(GpuMemoryProfile, CsvColumnsScopesAndOrder) {
  storage::clear_gpu_memory_profile();
  const std::string before = profiler::scope();
  int a = 0, b = 0, c = 0;
  profiler::set_scope("model:dense0:");
  storage::gpu_memory_profile_alloc(&a, 1000, 0, 1024, false);
  profiler::set_scope("data:");
  storage::gpu_memory_profile_alloc(&b, 10, 1, 256, true);
  storage::gpu_memory_profile_alloc(&c, 5, 0, 256, false);
  storage::gpu_memory_profile_free(&c);  // freed: not in the file
  profiler::set_scope(before);

  const auto dir = std::filesystem::temp_directory_path() / "nanomx_gpu_memory_profile_test";
  std::filesystem::create_directories(dir);
  const std::string prefix = (dir / "gpu_memory_profile").string();
  const std::string path = storage::write_gpu_memory_profile(prefix);
  EXPECT_EQ(path, prefix + "-pid_" + std::to_string(::getpid()) + ".csv");
  EXPECT_EQ(read(path),
            "\"Attribute Name\",\"Requested Size\",\"Device\",\"Actual Size\",\"Reuse?\"\n"
            "\"data:unknown\",\"10\",\"1\",\"256\",\"1\"\n"
            "\"model:dense0:unknown\",\"1000\",\"0\",\"1024\",\"0\"\n");
  // The entries stay after a write; an unwritable place writes nothing.
  EXPECT_EQ(storage::write_gpu_memory_profile((dir / "no_such_dir" / "x").string()), "");
  storage::clear_gpu_memory_profile();
  EXPECT_EQ(read(storage::write_gpu_memory_profile(prefix)),
            "\"Attribute Name\",\"Requested Size\",\"Device\",\"Actual Size\",\"Reuse?\"\n");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace nanomx
