// The array / operator C API: handles, copies, invoke, save/load, errors as -1 + MXGetLastError.
#include "nanomx/c_api.h"

#include <gtest/gtest.h>

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
  EXPECT_EQ(gpus, 0);
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
  EXPECT_EQ(MXNDArrayCreateEx(nullptr, 0, 2, 0, 0, 0, &b), -1);   // no GPU
  EXPECT_EQ(MXNDArrayCreateEx(nullptr, 0, 1, 0, 0, 12, &b), -1);  // bfloat16 unsupported
  EXPECT_EQ(MXNDArrayLoad("/nonexistent/x.params", nullptr, nullptr, nullptr, nullptr), -1);
  EXPECT_EQ(MXNDArrayWaitToRead(nullptr), -1);
  EXPECT_NE(std::string(MXGetLastError()).find("must not be null"), std::string::npos);
  ASSERT_OK(MXNDArrayFree(a));
  ASSERT_OK(MXNDArrayFree(inputs[1]));
  // Stale and foreign handles are errors, not crashes.
  EXPECT_EQ(MXNDArrayFree(a), -1);
  EXPECT_NE(std::string(MXGetLastError()).find("not a live NDArray handle"), std::string::npos);
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
      EXPECT_NE(std::string(MXGetLastError()).find("not a live NDArray handle"), std::string::npos);
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
