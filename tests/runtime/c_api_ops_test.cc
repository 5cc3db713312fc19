// MXImperativeInvoke with several outputs (SliceChannel) and any number of inputs (add_n), and
// the operator info a variadic operator reports.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "nanomx/c_api.h"
#include "nanomx/c_api_ndarray.h"

namespace {

#define ASSERT_OK(call) ASSERT_EQ((call), 0) << MXGetLastError()

NDArrayHandle array_of(std::vector<mx_uint> shape, const std::vector<float>& values) {
  NDArrayHandle h = nullptr;
  EXPECT_EQ(MXNDArrayCreateEx(shape.data(), static_cast<mx_uint>(shape.size()), 1, 0, 0, 0, &h), 0);
  EXPECT_EQ(MXNDArraySyncCopyFromCPU(h, values.data(), values.size()), 0);
  return h;
}

std::vector<float> values(NDArrayHandle h, size_t n) {
  std::vector<float> v(n);
  EXPECT_EQ(MXNDArraySyncCopyToCPU(h, v.data(), n), 0);
  return v;
}

OpHandle op(const char* name) {
  OpHandle h = nullptr;
  EXPECT_EQ(NNGetOpHandle(name, &h), 0);
  return h;
}

TEST(CApiOps, InvokeReturnsEveryOutput) {
  NDArrayHandle x = array_of({2, 4}, {0, 1, 2, 3, 4, 5, 6, 7});
  const char* keys[] = {"num_outputs"};
  const char* vals[] = {"2"};
  int num_outputs = 0;
  NDArrayHandle* outputs = nullptr;
  ASSERT_OK(MXImperativeInvoke(op("split"), 1, &x, &num_outputs, &outputs, 1, keys, vals));
  ASSERT_EQ(num_outputs, 2);
  const std::vector<NDArrayHandle> got(outputs, outputs + 2);
  EXPECT_EQ(values(got[0], 4), (std::vector<float>{0, 1, 4, 5}));
  EXPECT_EQ(values(got[1], 4), (std::vector<float>{2, 3, 6, 7}));
  // Caller-given outputs, one per result.
  NDArrayHandle given[] = {array_of({2, 2}, {0, 0, 0, 0}), array_of({2, 2}, {0, 0, 0, 0})};
  NDArrayHandle* given_list = given;
  num_outputs = 2;
  ASSERT_OK(
      MXImperativeInvoke(op("SliceChannel"), 1, &x, &num_outputs, &given_list, 1, keys, vals));
  EXPECT_EQ(given_list, given);
  EXPECT_EQ(values(given[1], 4), (std::vector<float>{2, 3, 6, 7}));
  num_outputs = 1;
  EXPECT_EQ(MXImperativeInvoke(op("split"), 1, &x, &num_outputs, &given_list, 1, keys, vals), -1);
  EXPECT_NE(std::string(MXGetLastError()).find("expected 2 output array(s)"), std::string::npos)
      << MXGetLastError();
  for (NDArrayHandle h : {x, got[0], got[1], given[0], given[1]}) ASSERT_OK(MXNDArrayFree(h));
}

TEST(CApiOps, VariadicAddN) {
  std::vector<NDArrayHandle> in;
  for (int i = 0; i < 6; ++i) in.push_back(array_of({2}, {float(i), 1}));
  int num_outputs = 0;
  NDArrayHandle* outputs = nullptr;
  ASSERT_OK(
      MXImperativeInvoke(op("add_n"), 6, in.data(), &num_outputs, &outputs, 0, nullptr, nullptr));
  ASSERT_EQ(num_outputs, 1);
  EXPECT_EQ(values(outputs[0], 2), (std::vector<float>{15, 6}));
  ASSERT_OK(MXNDArrayFree(outputs[0]));
  const char *name = nullptr, *description = nullptr, *key_var = nullptr;
  mx_uint num_args = 0;
  const char **arg_names = nullptr, **arg_types = nullptr, **arg_descriptions = nullptr;
  ASSERT_OK(MXSymbolGetAtomicSymbolInfo(op("ElementWiseSum"), &name, &description, &num_args,
                                        &arg_names, &arg_types, &arg_descriptions, &key_var,
                                        nullptr));
  EXPECT_EQ(std::string(name), "add_n");
  EXPECT_EQ(std::string(key_var), "num_args");
  ASSERT_GE(num_args, 1u);
  EXPECT_EQ(std::string(arg_types[0]), "NDArray-or-Symbol[]");
  for (NDArrayHandle h : in) ASSERT_OK(MXNDArrayFree(h));
}

}  // namespace
