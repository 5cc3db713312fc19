// The GPU memory profile's table and CSV (docs/cuda.md): entries carry their attribute (scope +
// name), frees remove them, an arena is written as its described regions, and the file has
// MXNet's quoted columns with rows sorted by attribute. The table is fed directly here, so this
// runs without a GPU (tests/runtime/memory_label_test.cc covers where the names come from).
#include "backends/cuda/gpu_memory_profile.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "nanomx/gpu.h"
#include "nanomx/profiler.h"

namespace nanomx {
namespace {

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The rows alone: no driver to ask for the amend row (as on a machine without NVML).
std::optional<uint64_t> no_driver(int, std::string* why) {
  *why = "no driver in this test";
  return std::nullopt;
}

TEST(GpuMemoryProfile, CsvColumnsScopesAndOrder) {
  storage::clear_gpu_memory_profile();
  int a = 0, b = 0, c = 0;
  storage::gpu_memory_profile_alloc(&a, "model:dense0:in_arg:weight", 1000, 0, 1024, false);
  storage::gpu_memory_profile_alloc(&b, "data:unknown", 10, 1, 256, true);
  storage::gpu_memory_profile_alloc(&c, "data:_zeros", 5, 0, 256, false);
  int d = 0;
  storage::gpu_memory_profile_alloc(&d, "data:say \"hi\"", 1, 0, 256, false);
  storage::gpu_memory_profile_free(&c);  // freed: not in the file

  const auto dir = std::filesystem::temp_directory_path() / "nanomx_gpu_memory_profile_test";
  std::filesystem::create_directories(dir);
  const std::string prefix = (dir / "gpu_memory_profile").string();
  const std::string path = storage::write_gpu_memory_profile(prefix, no_driver);
  EXPECT_EQ(path, prefix + "-pid_" + std::to_string(::getpid()) + ".csv");
  EXPECT_EQ(read(path),
            "\"Attribute Name\",\"Requested Size\",\"Device\",\"Actual Size\",\"Reuse?\"\n"
            "\"data:say \"\"hi\"\"\",\"1\",\"0\",\"256\",\"0\"\n"
            "\"data:unknown\",\"10\",\"1\",\"256\",\"1\"\n"
            "\"model:dense0:in_arg:weight\",\"1000\",\"0\",\"1024\",\"0\"\n");
  // The entries stay after a write; an unwritable place writes nothing.
  EXPECT_EQ(storage::write_gpu_memory_profile((dir / "no_such_dir" / "x").string(), no_driver), "");
  storage::clear_gpu_memory_profile();
  EXPECT_EQ(read(storage::write_gpu_memory_profile(prefix, no_driver)),
            "\"Attribute Name\",\"Requested Size\",\"Device\",\"Actual Size\",\"Reuse?\"\n");
  std::filesystem::remove_all(dir);
}

// An executor's arena is one block, written as one row per described region: requested is the
// region's bytes, actual runs to the next region (the last one to the block's end), so the rows
// still add up to the block; freeing the block removes them all.
TEST(GpuMemoryProfile, ArenaIsWrittenAsItsRegions) {
  storage::clear_gpu_memory_profile();
  int arena = 0, other = 0, untracked = 0;
  storage::gpu_memory_profile_alloc(&arena, "<unk>:unknown", 4000, 0, 4096, true);
  storage::gpu_memory_profile_alloc(&other, "init:_random_uniform", 64, 0, 256, false);
  const std::vector<storage::ArenaRegion> regions = {
      {"tensordot:dot", 0, 1000}, {"tensordot:dot_backward", 1024, 2000}, {"relu0", 3072, 900}};
  storage::gpu_memory_profile_describe(&arena, regions);
  storage::gpu_memory_profile_describe(&untracked, regions);  // allocated while off: ignored

  const auto dir = std::filesystem::temp_directory_path() / "nanomx_gpu_memory_profile_arena";
  std::filesystem::create_directories(dir);
  const std::string prefix = (dir / "profile").string();
  const std::string header =
      "\"Attribute Name\",\"Requested Size\",\"Device\",\"Actual Size\",\"Reuse?\"\n";
  EXPECT_EQ(read(storage::write_gpu_memory_profile(prefix, no_driver)),
            header +
                "\"init:_random_uniform\",\"64\",\"0\",\"256\",\"0\"\n"
                "\"relu0\",\"900\",\"0\",\"1024\",\"1\"\n"
                "\"tensordot:dot\",\"1000\",\"0\",\"1024\",\"1\"\n"
                "\"tensordot:dot_backward\",\"2000\",\"0\",\"2048\",\"1\"\n");
  storage::gpu_memory_profile_free(&arena);
  EXPECT_EQ(read(storage::write_gpu_memory_profile(prefix, no_driver)),
            header + "\"init:_random_uniform\",\"64\",\"0\",\"256\",\"0\"\n");
  storage::clear_gpu_memory_profile();
  std::filesystem::remove_all(dir);
}

// MXNet's nvml_amend row per device with entries: what the driver accounts to the process minus
// the allocations' actual bytes, signed; nothing where the driver's number is unknown.
TEST(GpuMemoryProfile, AmendRowPerDeviceFromTheDriversAccount) {
  storage::clear_gpu_memory_profile();
  int a = 0, b = 0, c = 0;
  storage::gpu_memory_profile_alloc(&a, "x:a", 1000, 0, 1024, false);
  storage::gpu_memory_profile_alloc(&b, "x:b", 3000, 0, 4096, false);
  storage::gpu_memory_profile_alloc(&c, "x:c", 10, 2, 512, false);
  const auto dir = std::filesystem::temp_directory_path() / "nanomx_gpu_memory_profile_amend";
  std::filesystem::create_directories(dir);
  const std::string prefix = (dir / "profile").string();
  const std::string rows =
      "\"Attribute Name\",\"Requested Size\",\"Device\",\"Actual Size\",\"Reuse?\"\n"
      "\"x:a\",\"1000\",\"0\",\"1024\",\"0\"\n"
      "\"x:b\",\"3000\",\"0\",\"4096\",\"0\"\n"
      "\"x:c\",\"10\",\"2\",\"512\",\"0\"\n";
  // Device 0: the context's 300 MiB beyond the allocations; device 2: the driver reports less
  // than was allocated (a negative amendment, which MXNet's unsigned arithmetic would wrap).
  auto driver = +[](int dev, std::string* why) -> std::optional<uint64_t> {
    if (dev == 0) return 300u * 1024 * 1024 + 5120;
    if (dev == 2) return 500;
    *why = "no such device";
    return std::nullopt;
  };
  EXPECT_EQ(read(storage::write_gpu_memory_profile(prefix, driver)),
            rows +
                "\"nvml_amend\",\"314572800\",\"0\",\"314572800\",\"0\"\n"
                "\"nvml_amend\",\"-12\",\"2\",\"-12\",\"0\"\n");
  EXPECT_EQ(read(storage::write_gpu_memory_profile(prefix, no_driver)), rows);
  storage::clear_gpu_memory_profile();
  std::filesystem::remove_all(dir);
}

// Without a GPU (CI) the driver's library or the device is missing: the query says why.
TEST(GpuMemoryProfile, DriverQueryExplainsWhyItHasNoAnswer) {
  if (nanomx::num_gpus() > 0) GTEST_SKIP() << "a GPU is visible: the query may well answer";
  std::string why;
  EXPECT_FALSE(storage::nvml_process_memory(0, &why).has_value());
  EXPECT_FALSE(why.empty());
}

}  // namespace
}  // namespace nanomx
