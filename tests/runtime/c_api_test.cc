// The array / operator C API: handles, copies, invoke, save/load, errors as -1 + MXGetLastError.
#include "nanomx/c_api.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "nanomx/c_api_ndarray.h"

namespace {

#define ASSERT_OK(call) ASSERT_EQ((call), 0) << MXGetLastError()

NDArrayHandle create(std::vector<mx_uint> shape, int dtype = 0) {
  NDArrayHandle h = nullptr;
  EXPECT_EQ(MXNDArrayCreateEx(shape.data(), static_cast<mx_uint>(shape.size()), 1, 0, 0, dtype, &h),
            0)
      << MXGetLastError();
  return h;
}

std::vector<float> read(NDArrayHandle h, size_t n) {
  std::vector<float> out(n);
  EXPECT_EQ(MXNDArraySyncCopyToCPU(h, out.data(), n), 0) << MXGetLastError();
  return out;
}

OpHandle op(const char* name) {
  OpHandle h = nullptr;
  EXPECT_EQ(NNGetOpHandle(name, &h), 0) << MXGetLastError();
  return h;
}

TEST(CApiNDArray, CreateCopyInvokeAndFree) {
  NDArrayHandle a = create({2, 3});
  const std::vector<float> values = {1, 2, 3, 4, 5, 6};
  ASSERT_OK(MXNDArraySyncCopyFromCPU(a, values.data(), values.size()));
  int ndim = 0;
  const int* dims = nullptr;
  ASSERT_OK(MXNDArrayGetShapeEx(a, &ndim, &dims));
  ASSERT_EQ(ndim, 2);
  EXPECT_EQ(dims[0], 2);
  EXPECT_EQ(dims[1], 3);
  int dtype = -1, dev_type = 0, dev_id = -1;
  ASSERT_OK(MXNDArrayGetDType(a, &dtype));
  ASSERT_OK(MXNDArrayGetContext(a, &dev_type, &dev_id));
  EXPECT_EQ(dtype, 0);
  EXPECT_EQ(dev_type, 1);
  EXPECT_EQ(dev_id, 0);

  // New output
  NDArrayHandle inputs[] = {a, a};
  int num_outputs = 0;
  NDArrayHandle* outputs = nullptr;
  ASSERT_OK(MXImperativeInvoke(op("broadcast_add"), 2, inputs, &num_outputs, &outputs, 0, nullptr,
                               nullptr));
  ASSERT_EQ(num_outputs, 1);
  NDArrayHandle sum = outputs[0];
  EXPECT_EQ(read(sum, 6), (std::vector<float>{2, 4, 6, 8, 10, 12}));
  // Into an existing output, with string attributes
  NDArrayHandle into[] = {a};
  NDArrayHandle* into_ptr = into;
  int one = 1;
  const char* keys[] = {"scalar"};
  const char* vals[] = {"0.5"};
  ASSERT_OK(MXImperativeInvoke(op("_plus_scalar"), 1, inputs, &one, &into_ptr, 1, keys, vals));
  ASSERT_OK(MXNDArrayWaitToRead(a));
  EXPECT_EQ(read(a, 6), (std::vector<float>{1.5, 2.5, 3.5, 4.5, 5.5, 6.5}));

  // Views
  NDArrayHandle row = nullptr, rows = nullptr, reshaped = nullptr;
  ASSERT_OK(MXNDArrayAt(a, 1, &row));
  EXPECT_EQ(read(row, 3), (std::vector<float>{4.5, 5.5, 6.5}));
  ASSERT_OK(MXNDArraySlice(a, 0, 1, &rows));
  EXPECT_EQ(read(rows, 3), (std::vector<float>{1.5, 2.5, 3.5}));
  dim_t spec[] = {-1};
  ASSERT_OK(MXNDArrayReshape64(a, 1, spec, false, &reshaped));
  ASSERT_OK(MXNDArrayGetShapeEx(reshaped, &ndim, &dims));
  ASSERT_EQ(ndim, 1);
  EXPECT_EQ(dims[0], 6);
  ASSERT_OK(MXNDArrayWaitToWrite(a));
  ASSERT_OK(MXNDArrayWaitAll());
  for (NDArrayHandle h : {a, sum, row, rows, reshaped}) ASSERT_OK(MXNDArrayFree(h));

  int gpus = -1;
  ASSERT_OK(MXGetGPUCount(&gpus));
  EXPECT_GE(gpus, 0);  // 0 without a GPU (runtime_gpu_availability_test)
  ASSERT_OK(MXRandomSeed(3));
}

TEST(CApiNDArray, SaveLoadAndRawBytes) {
  NDArrayHandle a = create({2, 3});
  const std::vector<float> values = {1, 2, 3, 4, 5, 6};
  ASSERT_OK(MXNDArraySyncCopyFromCPU(a, values.data(), values.size()));
  const std::string path =
      (std::filesystem::temp_directory_path() / "nanomx_c_api_test.params").string();
  NDArrayHandle args[] = {a};
  ASSERT_OK(MXNDArraySave(path.c_str(), 1, args, nullptr));
  EXPECT_EQ(std::filesystem::file_size(path), 96u);
  const char* keys[] = {"arg:weight"};
  ASSERT_OK(MXNDArraySave(path.c_str(), 1, args, keys));
  mx_uint n = 0, n_names = 0;
  NDArrayHandle* loaded = nullptr;
  const char** names = nullptr;
  ASSERT_OK(MXNDArrayLoad(path.c_str(), &n, &loaded, &n_names, &names));
  ASSERT_EQ(n, 1u);
  ASSERT_EQ(n_names, 1u);
  EXPECT_STREQ(names[0], "arg:weight");
  EXPECT_EQ(read(loaded[0], 6), values);
  ASSERT_OK(MXNDArrayFree(loaded[0]));
  std::remove(path.c_str());

  size_t size = 0;
  const char* buf = nullptr;
  ASSERT_OK(MXNDArraySaveRawBytes(a, &size, &buf));
  const std::string blob(buf, size);
  NDArrayHandle back = nullptr;
  ASSERT_OK(MXNDArrayLoadFromRawBytes(blob.data(), blob.size(), &back));
  EXPECT_EQ(read(back, 6), values);
  EXPECT_EQ(MXNDArrayLoadFromRawBytes(blob.data(), blob.size() - 1, &back), -1);
  EXPECT_NE(std::string(MXGetLastError()).find("raw bytes: truncated at byte offset"),
            std::string::npos)
      << MXGetLastError();
  ASSERT_OK(MXNDArrayFree(back));
  ASSERT_OK(MXNDArrayFree(a));

  NDArrayHandle none = nullptr;
  ASSERT_OK(MXNDArrayCreateNone(&none));
  int ndim = -1;
  const int* dims = nullptr;
  ASSERT_OK(MXNDArrayGetShapeEx(none, &ndim, &dims));
  EXPECT_EQ(ndim, 0);
  ASSERT_OK(MXNDArrayFree(none));
}

TEST(CApiNDArray, FailuresReturnMinusOneWithAMessage) {
  OpHandle h = nullptr;
  EXPECT_EQ(NNGetOpHandle("not_an_op", &h), -1);
  EXPECT_NE(std::string(MXGetLastError()).find("not_an_op"), std::string::npos);
  NDArrayHandle a = create({2, 3}), b = create({4, 3});
  NDArrayHandle inputs[] = {a, b};
  int num_outputs = 0;
  NDArrayHandle* outputs = nullptr;
  EXPECT_EQ(MXImperativeInvoke(op("broadcast_mul"), 2, inputs, &num_outputs, &outputs, 0, nullptr,
                               nullptr),
            -1);
  const std::string msg = MXGetLastError();
  EXPECT_NE(msg.find("broadcast_mul"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(4,3)"), std::string::npos) << msg;
  std::vector<float> small(5);
  EXPECT_EQ(MXNDArraySyncCopyToCPU(a, small.data(), small.size()), -1);
  EXPECT_NE(std::string(MXGetLastError()).find("5 elements"), std::string::npos);
  int gpus = 0;
  ASSERT_EQ(MXGetGPUCount(&gpus), 0);
  if (gpus == 0) {
    EXPECT_EQ(MXNDArrayCreateEx(nullptr, 0, 2, 0, 0, 0, &b), -1);  // no GPU
  }
  EXPECT_EQ(MXNDArrayCreateEx(nullptr, 0, 1, 0, 0, 12, &b), -1);  // bfloat16 unsupported
  EXPECT_EQ(MXNDArrayLoad("/nonexistent/x.params", nullptr, nullptr, nullptr, nullptr), -1);
  EXPECT_EQ(MXNDArrayWaitToRead(nullptr), -1);
  EXPECT_NE(std::string(MXGetLastError()).find("must not be null"), std::string::npos);
  ASSERT_OK(MXNDArrayFree(a));
  ASSERT_OK(MXNDArrayFree(inputs[1]));
  // Stale and foreign handles are errors, not crashes.
  EXPECT_EQ(MXNDArrayFree(a), -1);
  EXPECT_NE(std::string(MXGetLastError()).find("stale or unknown NDArray handle"),
            std::string::npos);
  int dtype = 0;
  EXPECT_EQ(MXNDArrayGetDType(a, &dtype), -1);
  int not_an_array = 0;
  EXPECT_EQ(MXNDArrayWaitToRead(&not_an_array), -1);
  EXPECT_EQ(MXNDArrayFree(nullptr), 0);
}

// Many live handles (the live-handle table grows and shifts entries on erase): each stays
// usable until freed, and each freed one is rejected until its slot is handed out again.
TEST(CApiNDArray, ManyHandlesFreedInMixedOrder) {
  std::vector<NDArrayHandle> handles;
  for (mx_uint i = 0; i < 2000; ++i)
    handles.push_back(create({i % 7 + 1}, static_cast<int>(i % 2)));
  std::vector<bool> freed(handles.size(), false);
  for (size_t i = 0; i < handles.size(); i += 3) {
    ASSERT_OK(MXNDArrayFree(handles[i]));
    freed[i] = true;
  }
  for (size_t i = handles.size(); i-- > 0;) {
    int dtype = -2;
    if (freed[i]) {
      EXPECT_EQ(MXNDArrayGetDType(handles[i], &dtype), -1) << i;
      EXPECT_NE(std::string(MXGetLastError()).find("stale or unknown NDArray handle"),
                std::string::npos);
    } else {
      ASSERT_OK(MXNDArrayGetDType(handles[i], &dtype));
      EXPECT_EQ(dtype, static_cast<int>(i % 2)) << i;
      int ndim = 0;
      const int* dims = nullptr;
      ASSERT_OK(MXNDArrayGetShapeEx(handles[i], &ndim, &dims));
      ASSERT_EQ(ndim, 1);
      EXPECT_EQ(dims[0], static_cast<int>(i % 7 + 1)) << i;
    }
  }
  for (size_t i = 0; i < handles.size(); ++i) {
    if (!freed[i]) {
      ASSERT_OK(MXNDArrayFree(handles[i]));
    }
  }
  EXPECT_EQ(MXNDArrayFree(handles[1]), -1);
}

bool error_has(const std::string& part) {
  return std::string(MXGetLastError()).find(part) != std::string::npos;
}

// A freed handle is never given out again, so a stale copy of it (or a double free) is refused
// even once a new array sits in the freed slot, and the new array is untouched.
TEST(CApiNDArray, StaleHandleAfterFreeIsRefusedAndNeverReused) {
  NDArrayHandle first = create({2});
  ASSERT_OK(MXNDArrayFree(first));
  std::vector<NDArrayHandle> later;
  for (int i = 0; i < 64; ++i) {
    later.push_back(create({3}));
    EXPECT_NE(later.back(), first) << i;
  }
  int dtype = 0;
  EXPECT_EQ(MXNDArrayGetDType(first, &dtype), -1);
  EXPECT_TRUE(error_has("MXNDArrayGetDType: handle is a stale or unknown NDArray handle 0x"))
      << MXGetLastError();
  EXPECT_TRUE(error_has("freed or destroyed already")) << MXGetLastError();
  // Double free: refused, and the arrays created since are all still there.
  EXPECT_EQ(MXNDArrayFree(first), -1);
  EXPECT_TRUE(error_has("MXNDArrayFree: handle is a stale or unknown NDArray handle"));
  for (NDArrayHandle h : later) {
    int ndim = 0;
    const int* dims = nullptr;
    ASSERT_OK(MXNDArrayGetShapeEx(h, &ndim, &dims));
    EXPECT_EQ(dims[0], 3);
    ASSERT_OK(MXNDArrayFree(h));
  }
}

// Every function that takes an NDArray handle refuses a stale one, naming itself.
TEST(CApiNDArray, EveryFunctionRefusesAStaleHandle) {
  NDArrayHandle h = create({2});
  ASSERT_OK(MXNDArrayFree(h));
  NDArrayHandle keep = create({2});  // may take the freed slot
  int i = 0;
  const int* p = nullptr;
  const int64_t* p64 = nullptr;
  float buf[2];
  NDArrayHandle out = nullptr;
  size_t size = 0;
  const char* bytes = nullptr;
  const char* file = "stale_handle.params";
  dim_t dims[] = {2};
  NDArrayHandle list[] = {h};
  NDArrayHandle* outputs = nullptr;
  const std::vector<std::pair<std::string, int>> calls = {
      {"MXNDArrayFree", MXNDArrayFree(h)},
      {"MXNDArrayGetShapeEx", MXNDArrayGetShapeEx(h, &i, &p)},
      {"MXNDArrayGetShapeEx64", MXNDArrayGetShapeEx64(h, &i, &p64)},
      {"MXNDArrayGetDType", MXNDArrayGetDType(h, &i)},
      {"MXNDArrayGetContext", MXNDArrayGetContext(h, &i, &i)},
      {"MXNDArraySyncCopyFromCPU", MXNDArraySyncCopyFromCPU(h, buf, 2)},
      {"MXNDArraySyncCopyToCPU", MXNDArraySyncCopyToCPU(h, buf, 2)},
      {"MXNDArrayWaitToRead", MXNDArrayWaitToRead(h)},
      {"MXNDArrayWaitToWrite", MXNDArrayWaitToWrite(h)},
      {"MXNDArraySlice", MXNDArraySlice(h, 0, 1, &out)},
      {"MXNDArrayAt", MXNDArrayAt(h, 0, &out)},
      {"MXNDArrayReshape64", MXNDArrayReshape64(h, 1, dims, false, &out)},
      {"MXNDArraySave", MXNDArraySave(file, 1, list, nullptr)},
      {"MXNDArraySaveRawBytes", MXNDArraySaveRawBytes(h, &size, &bytes)},
      {"MXImperativeInvoke",
       MXImperativeInvoke(op("_plus_scalar"), 1, list, &i, &outputs, 0, nullptr, nullptr)},
  };
  for (const auto& [function, rc] : calls) {
    EXPECT_EQ(rc, -1) << function;
  }
  // Each message is checked right after its own call (MXGetLastError keeps only the last one).
  EXPECT_EQ(MXNDArrayWaitToRead(h), -1);
  EXPECT_TRUE(error_has("MXNDArrayWaitToRead: handle is a stale or unknown NDArray handle"));
  EXPECT_EQ(MXImperativeInvoke(op("_plus_scalar"), 1, list, &i, &outputs, 0, nullptr, nullptr), -1);
  EXPECT_TRUE(
      error_has("MXImperativeInvoke: array handle #0 of the list is a stale or unknown "
                "NDArray handle"))
      << MXGetLastError();
  NDArrayHandle* given = list;
  i = 1;
  EXPECT_EQ(MXImperativeInvoke(op("_plus_scalar"), 1, &keep, &i, &given, 0, nullptr, nullptr), -1);
  EXPECT_TRUE(error_has("stale or unknown NDArray handle")) << MXGetLastError();
  EXPECT_FALSE(std::filesystem::exists(file));
  ASSERT_OK(MXNDArrayFree(keep));
}

// Values never given out, and handles of another kind, are refused with the reason.
TEST(CApiNDArray, MadeUpAndOtherKindHandlesAreRefused) {
  int local = 0;
  for (NDArrayHandle bogus :
       {static_cast<NDArrayHandle>(&local), reinterpret_cast<NDArrayHandle>(uintptr_t{8}),
        reinterpret_cast<NDArrayHandle>(~uintptr_t{0}),
        reinterpret_cast<NDArrayHandle>(uintptr_t{1} << 56 | 0x3ffffff)}) {
    EXPECT_EQ(MXNDArrayFree(bogus), -1);
    EXPECT_TRUE(error_has("never given out by this library")) << MXGetLastError();
    int dtype = 0;
    EXPECT_EQ(MXNDArrayGetDType(bogus, &dtype), -1);
  }
  // An operator handle where an array is expected, and an array where an operator is.
  OpHandle copy = op("_plus_scalar");
  EXPECT_EQ(MXNDArrayFree(copy), -1);
  EXPECT_TRUE(error_has("it is an operator handle, not an NDArray handle")) << MXGetLastError();
  ProfileHandle domain = nullptr;
  ASSERT_OK(MXProfileCreateDomain("handles", &domain));
  EXPECT_EQ(MXNDArrayWaitToRead(domain), -1);
  EXPECT_TRUE(error_has("it is a profiler object handle, not an NDArray handle"));
  NDArrayHandle a = create({2});
  int n = 0;
  NDArrayHandle* outputs = nullptr;
  EXPECT_EQ(MXImperativeInvoke(a, 1, &a, &n, &outputs, 0, nullptr, nullptr), -1);
  EXPECT_TRUE(error_has("MXImperativeInvoke: op handle is a stale or unknown operator handle"))
      << MXGetLastError();
  const char *name = nullptr, *description = nullptr, *key_var = nullptr, *ret = nullptr;
  mx_uint num_args = 0;
  const char **arg_names = nullptr, **arg_types = nullptr, **arg_descriptions = nullptr;
  EXPECT_EQ(MXSymbolGetAtomicSymbolInfo(&local, &name, &description, &num_args, &arg_names,
                                        &arg_types, &arg_descriptions, &key_var, &ret),
            -1);
  EXPECT_TRUE(error_has("never given out by this library")) << MXGetLastError();
  // The same operator keeps the same handle.
  EXPECT_EQ(op("_plus_scalar"), copy);
  ASSERT_OK(MXNDArrayFree(a));
}

// A wild ndim or a shape past 2^63 bytes is a clear error, never a bare std::bad_alloc.
TEST(CApiNDArray, ShapeLimitsGiveClearErrors) {
  NDArrayHandle out = nullptr;
  std::vector<mx_uint> shape(33, 1);
  EXPECT_EQ(MXNDArrayCreateEx(shape.data(), 0x7fffffff, 1, 0, 0, 0, &out), -1);
  EXPECT_TRUE(error_has("MXNDArrayCreateEx: ndim 2147483647 is out of range (expected 0..32)"))
      << MXGetLastError();
  EXPECT_EQ(MXNDArrayCreateEx(shape.data(), 33, 1, 0, 0, 0, &out), -1);
  const mx_uint huge[] = {0xffffffffu, 0xffffffffu, 0xffffffffu};
  EXPECT_EQ(MXNDArrayCreateEx(huge, 3, 1, 0, 0, 0, &out), -1);
  EXPECT_TRUE(error_has("is too large (more than 2^63 bytes)")) << MXGetLastError();
  NDArrayHandle a = create({2});
  dim_t spec[] = {2};
  EXPECT_EQ(MXNDArrayReshape64(a, 0x7fffffff, spec, false, &out), -1);
  EXPECT_TRUE(error_has("MXNDArrayReshape64: ndim 2147483647 is out of range (expected 0..64)"))
      << MXGetLastError();
  ASSERT_OK(MXNDArrayFree(a));
  EXPECT_EQ(MXNDArrayCreateEx(shape.data(), 32, 1, 0, 0, 0, &out), 0) << MXGetLastError();
  ASSERT_OK(MXNDArrayFree(out));
}

TEST(CApiNDArray, DTypeTableListsEveryTypeWithCodeNameAndSize) {
  mx_uint n = 0;
  const int* codes = nullptr;
  const char** names = nullptr;
  const mx_uint* sizes = nullptr;
  ASSERT_OK(MXGetDTypeTable(&n, &codes, &names, &sizes));
  const std::vector<std::tuple<int, std::string, mx_uint>> expected = {
      {0, "float32", 4}, {1, "float64", 8}, {2, "float16", 2}, {3, "uint8", 1},
      {4, "int32", 4},   {5, "int8", 1},    {6, "int64", 8}};
  ASSERT_EQ(n, expected.size());
  for (mx_uint i = 0; i < n; ++i) {
    EXPECT_EQ(codes[i], std::get<0>(expected[i]));
    EXPECT_EQ(names[i], std::get<1>(expected[i]));
    EXPECT_EQ(sizes[i], std::get<2>(expected[i]));
    // Every listed code makes an array of that type.
    const mx_uint shape[1] = {2};
    NDArrayHandle a = nullptr;
    ASSERT_OK(MXNDArrayCreateEx(shape, 1, 1, 0, 0, codes[i], &a));
    int dtype = -1;
    ASSERT_OK(MXNDArrayGetDType(a, &dtype));
    EXPECT_EQ(dtype, codes[i]);
    ASSERT_OK(MXNDArrayFree(a));
  }
  // The arrays are the library's: a second call gives the same pointers.
  const int* again = nullptr;
  ASSERT_OK(MXGetDTypeTable(&n, &again, &names, &sizes));
  EXPECT_EQ(again, codes);
  EXPECT_EQ(MXGetDTypeTable(nullptr, &codes, &names, &sizes), -1);
  EXPECT_NE(std::string(MXGetLastError()).find("out_size"), std::string::npos) << MXGetLastError();
}

TEST(CApiNDArray, ListsOperatorNames) {
  mx_uint n = 0;
  const char** names = nullptr;
  ASSERT_OK(MXListAllOpNames(&n, &names));
  std::vector<std::string> all(names, names + n);
  for (const char* want : {"broadcast_add", "dot", "_onehot_encode", "choose_element_0index"}) {
    EXPECT_NE(std::find(all.begin(), all.end(), want), all.end()) << want;
  }
}

TEST(CApiNDArray, CallsAreProfiledAsApiEvents) {
  const std::string path =
      (std::filesystem::temp_directory_path() / "nanomx_c_api_profile.json").string();
  const char* keys[] = {"profile_api", "filename", "continuous_dump"};
  const char* vals[] = {"true", path.c_str(), "false"};
  ASSERT_OK(MXSetProfilerConfig(3, keys, vals));
  ASSERT_OK(MXSetProfilerState(1));
  NDArrayHandle a = create({4});
  NDArrayHandle inputs[] = {a};
  int num_outputs = 0;
  NDArrayHandle* outputs = nullptr;
  ASSERT_OK(
      MXImperativeInvoke(op("negative"), 1, inputs, &num_outputs, &outputs, 0, nullptr, nullptr));
  NDArrayHandle out = outputs[0];
  ASSERT_OK(MXNDArrayWaitAll());
  ASSERT_OK(MXNDArrayFree(out));
  ASSERT_OK(MXNDArrayFree(a));
  ASSERT_OK(MXSetProfilerState(0));
  ASSERT_OK(MXDumpProfile(1));
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  const auto trace = nlohmann::json::parse(text.str());
  std::set<std::string> calls;
  for (const auto& e : trace["traceEvents"]) {
    if (e.value("cat", "") == "MXNET_C_API" && e["ph"] == "b") calls.insert(e["name"]);
  }
  for (const char* want : {"MXNDArrayCreateEx", "NNGetOpHandle", "MXImperativeInvoke",
                           "MXNDArrayWaitAll", "MXNDArrayFree"}) {
    EXPECT_TRUE(calls.count(want)) << want;
  }
  std::filesystem::remove(path);
}

}  // namespace
