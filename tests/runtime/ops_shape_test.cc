// The shape, indexing, sorting, creation and random operators added for MXNet parity: their
// definitions on (partial) shapes and dtypes alone, then a few kernels through invoke, on each
// dtype where the kernel depends on it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "nanomx/ops.h"
#include "ops/op.h"
#include "ops/registry.h"
#include "test_util.h"

namespace nanomx::ops {
namespace {

using test::error_of;
using test::make;
using test::values_of;
constexpr int64_t kU = PartialShape::kUnknownDim;

struct Inferred {
  std::vector<PartialShape> out;
  std::vector<PartialDType> out_types;
};

Inferred infer(const std::string& name, std::vector<PartialShape> in, const Attrs& attrs = {},
               std::vector<PartialDType> in_types = {}) {
  const Op& op = get_op(name);
  const ParsedParams p = parse_attrs(op, attrs, in.size());
  const size_t n_out = static_cast<size_t>(op.outputs_of(p));
  std::vector<PartialShape> out(n_out);
  if (in_types.empty()) in_types.assign(in.size(), DType::kFloat32);
  std::vector<PartialDType> out_types(n_out);
  infer_shapes(op, p, in, out);
  infer_types(op, p, in_types, out_types);
  return {out, out_types};
}

PartialShape dims(std::initializer_list<int64_t> d) { return Shape(d); }
PartialShape partial(std::initializer_list<int64_t> d) {
  PartialShape s = PartialShape::of_rank(static_cast<int>(d.size()));
  int i = 0;
  for (int64_t v : d) s[i++] = v;
  return s;
}

TEST(OpsShapeInference, RankOnlyOperatorsKeepUnknownDims) {
  EXPECT_EQ(infer("expand_dims", {partial({kU, 3})}, {{"axis", "-1"}}).out[0], partial({kU, 3, 1}));
  EXPECT_EQ(infer("expand_dims", {partial({2, kU})}, {{"axis", "0"}}).out[0], partial({1, 2, kU}));
  EXPECT_EQ(infer("SwapAxis", {partial({kU, 3, 4})}, {{"dim1", "0"}, {"dim2", "-1"}}).out[0],
            partial({4, 3, kU}));
  EXPECT_EQ(infer("Flatten", {partial({kU, 3, 4})}).out[0], partial({kU, 12}));
  EXPECT_EQ(infer("Flatten", {partial({5, kU, 4})}).out[0], partial({5, kU}));
  EXPECT_FALSE(infer("expand_dims", {PartialShape()}, {{"axis", "0"}}).out[0].rank_known());
  // Operators that need every dim wait for them.
  EXPECT_FALSE(infer("tile", {partial({kU, 3})}, {{"reps", "(2,)"}}).out[0].rank_known());
  // Concat: dims off the axis come from any input; the axis needs every input's.
  EXPECT_EQ(infer("Concat", {dims({2, 3}), partial({kU, 3})}, {{"dim", "0"}}).out[0],
            partial({kU, 3}));
  EXPECT_EQ(infer("Concat", {partial({kU, 3}), partial({2, 4})}, {{"dim", "1"}}).out[0],
            dims({2, 7}));
  EXPECT_EQ(infer("stack", {partial({kU, 3}), partial({2, kU})}, {{"axis", "1"}}).out[0],
            dims({2, 2, 3}));
  EXPECT_NE(error_of([] {
              infer("Concat", {partial({kU, 3}), partial({2, 4})}, {{"dim", "0"}});
            }).find("Incompatible input shape"),
            std::string::npos);
}

// MXNet's Reshape special values on known shapes; an unknown input leaves the output unknown.
TEST(OpsShapeInference, ReshapeSpecialValues) {
  struct Row {
    std::initializer_list<int64_t> src;
    const char* spec;
    const char* reverse;
    std::initializer_list<int64_t> want;
  };
  const Row rows[] = {{{2, 3, 4}, "(4, 0, 2)", "False", {4, 3, 2}},
                      {{2, 3, 4}, "(6, 1, -1)", "False", {6, 1, 4}},
                      {{2, 3, 4}, "(-3, -2)", "False", {6, 4}},
                      {{2, 3, 4}, "(2, -4, -1, 3, -2)", "False", {2, 1, 3, 4}},
                      {{10, 5, 4}, "(-1, 0)", "False", {40, 5}},
                      {{10, 5, 4}, "(-1, 0)", "True", {50, 4}}};
  for (const Row& r : rows) {
    EXPECT_EQ(infer("Reshape", {dims(r.src)}, {{"shape", r.spec}, {"reverse", r.reverse}}).out[0],
              dims(r.want))
        << r.spec << " reverse=" << r.reverse;
  }
  // Unknown dims: copied by 0 and -2, unknown after -1, a merge or a split of an unknown dim.
  struct PartialRow {
    std::initializer_list<int64_t> src;
    const char* spec;
    const char* reverse;
    std::initializer_list<int64_t> want;
  };
  const PartialRow partial_rows[] = {
      {{kU, 3, 4}, "(0, -1)", "False", {kU, kU}},
      {{kU, 3, 4}, "(0, -3)", "False", {kU, 12}},
      {{2, kU, 4}, "(-3, 0)", "False", {kU, 4}},
      {{kU, 3, 4}, "(-2,)", "False", {kU, 3, 4}},
      {{kU, 6}, "(0, -4, 2, -1)", "False", {kU, 2, 3}},
      {{kU, 6}, "(-4, 2, -1, 0)", "False", {2, kU, 6}},
      {{kU, 5, 4}, "(-1, 0)", "True", {kU, 4}},
      {{kU, 3}, "(4, 0)", "False", {4, 3}},
  };
  for (const PartialRow& r : partial_rows) {
    EXPECT_EQ(
        infer("Reshape", {partial(r.src)}, {{"shape", r.spec}, {"reverse", r.reverse}}).out[0],
        partial(r.want))
        << r.spec << " reverse=" << r.reverse;
  }
  EXPECT_FALSE(infer("Reshape", {PartialShape()}, {{"shape", "(-1,)"}}).out[0].rank_known());
  const std::string msg = error_of([] {
    infer("Reshape", {dims({2, 3})}, {{"shape", "(-1, -1)"}});
  });
  EXPECT_NE(msg.find("Reshape"), std::string::npos) << msg;
}

TEST(OpsShapeInference, ShapesAndDtypesOfTheNewOperators) {
  EXPECT_EQ(infer("squeeze", {dims({1, 3, 1})}).out[0], dims({3}));
  EXPECT_EQ(infer("squeeze", {dims({1, 1})}).out[0], dims({1}));  // MXNet: (1,)
  EXPECT_EQ(infer("tile", {dims({2, 3})}, {{"reps", "(2, 1, 2)"}}).out[0], dims({2, 2, 6}));
  EXPECT_EQ(infer("repeat", {dims({2, 3})}, {{"repeats", "2"}}).out[0], dims({12}));
  EXPECT_EQ(infer("repeat", {dims({2, 3})}, {{"repeats", "2"}, {"axis", "-1"}}).out[0],
            dims({2, 6}));
  EXPECT_EQ(infer("Concat", {dims({2, 3}), dims({2, 1})}, {{"dim", "-1"}}).out[0], dims({2, 4}));
  EXPECT_EQ(infer("stack", {dims({2, 3}), dims({2, 3})}, {{"axis", "-1"}}).out[0], dims({2, 3, 2}));
  EXPECT_EQ(infer("take", {dims({4, 5}), dims({2, 3})}, {{"axis", "1"}}).out[0], dims({4, 2, 3}));
  auto r = infer("one_hot", {dims({2})}, {{"depth", "3"}, {"dtype", "int32"}});
  EXPECT_EQ(r.out[0], dims({2, 3}));
  EXPECT_EQ(r.out_types[0], DType::kInt32);
  EXPECT_EQ(infer("gather_nd", {dims({2, 3, 4}), dims({2, 5})}).out[0], dims({5, 4}));
  EXPECT_EQ(infer("diag", {dims({3})}, {{"k", "-1"}}).out[0], dims({4, 4}));
  EXPECT_EQ(infer("diag", {dims({2, 3, 4})}, {{"axis1", "1"}, {"axis2", "2"}}).out[0],
            dims({2, 3}));
  EXPECT_EQ(
      infer("Pad", {dims({1, 2, 3, 4})}, {{"mode", "edge"}, {"pad_width", "(0,0,0,0,1,2,3,4)"}})
          .out[0],
      dims({1, 2, 6, 11}));
  EXPECT_EQ(
      infer("batch_dot", {dims({2, 3, 4}), dims({2, 5, 4})}, {{"transpose_b", "True"}}).out[0],
      dims({2, 3, 5}));
  // topk: both outputs, values in the input dtype and indices in 'dtype'.
  r = infer("topk", {dims({3, 5})}, {{"k", "2"}, {"ret_typ", "both"}, {"dtype", "int64"}},
            {DType::kFloat64});
  ASSERT_EQ(r.out.size(), 2u);
  EXPECT_EQ(r.out[0], dims({3, 2}));
  EXPECT_EQ(r.out_types[0], DType::kFloat64);
  EXPECT_EQ(r.out_types[1], DType::kInt64);
  EXPECT_EQ(infer("argsort", {dims({3, 5})}, {{"axis", "None"}}).out[0], dims({15}));
  EXPECT_EQ(infer("argsort", {dims({3, 5})}).out_types[0], DType::kFloat32);
  // Creation: shapes from attributes alone.
  EXPECT_EQ(
      infer("_arange", {}, {{"start", "1"}, {"stop", "8"}, {"step", "3"}, {"repeat", "2"}}).out[0],
      dims({6}));
  EXPECT_EQ(infer("_eye", {}, {{"N", "3"}, {"dtype", "int8"}}).out_types[0], DType::kInt8);
  EXPECT_EQ(infer("_sample_uniform", {dims({2}), dims({2})}, {{"shape", "(3, 4)"}}).out[0],
            dims({2, 3, 4}));
  EXPECT_EQ(infer("_sample_multinomial", {dims({4})}).out[0], dims({1}));
  EXPECT_EQ(
      infer("_random_randint", {}, {{"low", "0"}, {"high", "3"}, {"shape", "(2,)"}}).out_types[0],
      DType::kInt32);
}

TEST(OpsShapeInference, ErrorsNameTheOperatorAndShapes) {
  std::string msg = error_of([] { infer("squeeze", {dims({2, 3})}, {{"axis", "1"}}); });
  EXPECT_NE(msg.find("size=3 not equal to one"), std::string::npos) << msg;
  msg = error_of([] { infer("Concat", {dims({2, 3}), dims({3, 4})}, {{"dim", "0"}}); });
  EXPECT_NE(msg.find("Incompatible input shape"), std::string::npos) << msg;
  msg = error_of([] {
    infer("Concat", {dims({2}), dims({2})}, {{"dim", "0"}}, {DType::kFloat32, DType::kFloat64});
  });
  EXPECT_NE(msg.find("Non-uniform data type in Concat"), std::string::npos) << msg;
  msg = error_of([] { infer("topk", {dims({2, 3})}, {{"k", "4"}}); });
  EXPECT_NE(msg.find("k must be smaller than 3"), std::string::npos) << msg;
  msg = error_of([] { infer("_arange", {}, {{"start", "2"}, {"stop", "2"}}); });
  EXPECT_NE(msg.find("Invalid range"), std::string::npos) << msg;
  msg = error_of([] {
    infer("Pad", {dims({2, 3})}, {{"mode", "edge"}, {"pad_width", "(0,0,1,1)"}});
  });
  EXPECT_NE(msg.find("4-D or 5-D"), std::string::npos) << msg;
  msg = error_of([] { infer("batch_dot", {dims({2, 3, 4}), dims({2, 3, 4})}); });
  EXPECT_NE(msg.find("shape mismatch"), std::string::npos) << msg;
}

template <typename T>
class OpsShapeKernels : public ::testing::Test {};
TYPED_TEST_SUITE(OpsShapeKernels, test::AllTypes);

template <typename T>
std::vector<T> iota_values(int n) {
  std::vector<T> v;
  for (int i = 0; i < n; ++i) v.push_back(from_double<T>(i));
  return v;
}

template <typename T>
std::vector<double> doubles(const std::vector<T>& v) {
  std::vector<double> d;
  for (const T& x : v) d.push_back(to_double(x));
  return d;
}

TYPED_TEST(OpsShapeKernels, TileRepeatTakeTopk) {
  using T = TypeParam;
  const NDArray a = make<T>({2, 3}, iota_values<T>(6));
  const NDArray tiled = invoke_one(get_op("tile"), std::vector{a}, {{"reps", "(2,)"}}, {});
  EXPECT_EQ(tiled.shape(), Shape({2, 6}));
  EXPECT_EQ(doubles(values_of<T>(tiled)),
            (std::vector<double>{0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5}));
  const NDArray rep =
      invoke_one(get_op("repeat"), std::vector{a}, {{"repeats", "2"}, {"axis", "0"}}, {});
  EXPECT_EQ(doubles(values_of<T>(rep)), (std::vector<double>{0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5}));
  const NDArray idx = make<int32_t>({2}, {2, -1});
  const NDArray taken =
      invoke_one(get_op("take"), std::vector{a, idx}, {{"axis", "1"}, {"mode", "wrap"}}, {});
  EXPECT_EQ(doubles(values_of<T>(taken)), (std::vector<double>{2, 2, 5, 5}));
  const auto both = invoke(get_op("topk"), std::vector{a},
                           {{"k", "2"}, {"ret_typ", "both"}, {"dtype", "int32"}}, {});
  ASSERT_EQ(both.size(), 2u);
  EXPECT_EQ(doubles(values_of<T>(both[0])), (std::vector<double>{2, 1, 5, 4}));
  EXPECT_EQ(values_of<int32_t>(both[1]), (std::vector<int32_t>{2, 1, 2, 1}));
}

TEST(OpsShapeKernels, BatchDotAndScatterSetInPlace) {
  const NDArray a = make<float>({2, 1, 2}, {1, 2, 3, 4});
  const NDArray b = make<float>({2, 2, 1}, {1, 1, 2, 0});
  const NDArray c = invoke_one(get_op("batch_dot"), std::vector{a, b}, {}, {});
  EXPECT_EQ(c.shape(), Shape({2, 1, 1}));
  EXPECT_EQ(values_of<float>(c), (std::vector<float>{3, 6}));
  const NDArray lhs = make<float>({2, 2}, {0, 0, 0, 0});
  const NDArray rhs = make<float>({2}, {7, 8});
  const NDArray where = make<int32_t>({2, 2}, {0, 1, 1, 0});
  const NDArray out = invoke_one(get_op("_scatter_set_nd"), std::vector{lhs, rhs, where},
                                 {{"shape", "(2, 2)"}}, std::vector{lhs});
  EXPECT_EQ(values_of<float>(lhs), (std::vector<float>{0, 7, 8, 0}));
  (void)out;
}

// Every other new kernel once, on small inputs (what the sanitizer builds run over).
TEST(OpsShapeKernels, EveryNewKernelOnSmallInputs) {
  const NDArray a = make<float>({1, 1, 2, 3}, {0, 1, 2, 3, 4, 5});
  const NDArray padded = invoke_one(get_op("Pad"), std::vector{a},
                                    {{"mode", "reflect"}, {"pad_width", "(0,0,0,0,1,1,2,2)"}}, {});
  EXPECT_EQ(padded.shape(), Shape({1, 1, 4, 7}));
  EXPECT_EQ(values_of<float>(padded)[0], 5.0f);  // row 1 reflected, column 2 reflected
  const NDArray m = make<float>({2, 3}, {0, 1, 2, 3, 4, 5});
  EXPECT_EQ(values_of<float>(invoke_one(get_op("Concat"), std::vector{m, m}, {{"dim", "1"}}, {})),
            (std::vector<float>{0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5}));
  EXPECT_EQ(values_of<float>(invoke_one(get_op("stack"), std::vector{m, m}, {{"axis", "2"}}, {})),
            (std::vector<float>{0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5}));
  const NDArray like = make<float>({1, 2}, {0, 0});
  EXPECT_EQ(values_of<float>(invoke_one(get_op("slice_like"), std::vector{m, like}, {}, {})),
            (std::vector<float>{0, 1}));
  const NDArray idx = make<int64_t>({2, 2}, {1, 0, 2, -1});
  EXPECT_EQ(values_of<float>(invoke_one(get_op("gather_nd"), std::vector{m, idx}, {}, {})),
            (std::vector<float>{5, 2}));
  EXPECT_EQ(values_of<float>(invoke_one(get_op("diag"), std::vector{m}, {{"k", "1"}}, {})),
            (std::vector<float>{1, 5}));
  EXPECT_EQ(values_of<float>(invoke_one(get_op("SwapAxis"), std::vector{m}, {{"dim2", "1"}}, {})),
            (std::vector<float>{0, 3, 1, 4, 2, 5}));
  const NDArray cond = make<int8_t>({2}, {0, 1});
  const NDArray ones = make<float>({2, 3}, {1, 1, 1, 1, 1, 1});
  EXPECT_EQ(values_of<float>(invoke_one(get_op("where"), std::vector{cond, m, ones}, {}, {})),
            (std::vector<float>{1, 1, 1, 3, 4, 5}));
  const NDArray hot_idx = make<uint8_t>({3}, {2, 0, 7});
  EXPECT_EQ(values_of<double>(invoke_one(get_op("one_hot"), std::vector{hot_idx},
                                         {{"depth", "3"}, {"dtype", "float64"}}, {})),
            (std::vector<double>{0, 0, 1, 1, 0, 0, 0, 0, 0}));
  const NDArray unsorted = make<half>({4}, {half(3.f), half(-1.f), half(2.f), half(0.f)});
  EXPECT_EQ(values_of<int32_t>(
                invoke_one(get_op("argsort"), std::vector{unsorted}, {{"dtype", "int32"}}, {})),
            (std::vector<int32_t>{1, 3, 2, 0}));
  EXPECT_EQ(values_of<float>(invoke_one(get_op("topk"), std::vector{m},
                                        {{"k", "1"}, {"ret_typ", "mask"}, {"axis", "0"}}, {})),
            (std::vector<float>{0, 0, 0, 1, 1, 1}));
  EXPECT_EQ(values_of<int64_t>(invoke_one(get_op("_arange"), {},
                                          {{"start", "2"}, {"stop", "5"}, {"dtype", "int64"}}, {})),
            (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(values_of<uint8_t>(
                invoke_one(get_op("_eye"), {}, {{"N", "2"}, {"k", "-1"}, {"dtype", "uint8"}}, {})),
            (std::vector<uint8_t>{0, 0, 1, 0}));
  EXPECT_EQ(values_of<float>(invoke_one(get_op("_linspace"), {},
                                        {{"start", "0"}, {"stop", "1"}, {"num", "3"}}, {})),
            (std::vector<float>{0, 0.5f, 1}));
  EXPECT_EQ(values_of<float>(invoke_one(get_op("ones_like"), std::vector{like}, {}, {})),
            (std::vector<float>{1, 1}));
  const NDArray probs = make<float>({2, 2}, {0, 1, 1, 0});
  const auto drawn = invoke(get_op("_sample_multinomial"), std::vector{probs},
                            {{"shape", "(3,)"}, {"get_prob", "True"}}, {});
  EXPECT_EQ(values_of<int32_t>(drawn[0]), (std::vector<int32_t>{1, 1, 1, 0, 0, 0}));
  EXPECT_EQ(values_of<float>(drawn[1]), (std::vector<float>(6, 0.f)));
  const NDArray shuffled = invoke_one(get_op("_shuffle"), std::vector{m}, {}, {});
  auto rows = values_of<float>(shuffled);
  std::sort(rows.begin(), rows.end());
  EXPECT_EQ(rows, values_of<float>(m));
  const NDArray lo = make<double>({2}, {0, 5}), hi = make<double>({2}, {1, 6});
  const auto u = values_of<float>(
      invoke_one(get_op("_sample_uniform"), std::vector{lo, hi}, {{"shape", "(50,)"}}, {}));
  for (size_t i = 0; i < u.size(); ++i) {
    EXPECT_GE(u[i], i < 50 ? 0.f : 5.f);
    EXPECT_LT(u[i], i < 50 ? 1.f : 6.f);
  }
  for (const char* op : {"_random_exponential", "_random_gamma", "_random_poisson"}) {
    const auto v = values_of<float>(invoke_one(get_op(op), {}, {{"shape", "(20,)"}}, {}));
    for (float x : v) EXPECT_GE(x, 0.f) << op;
  }
  for (int32_t x :
       values_of<int32_t>(invoke_one(get_op("_random_randint"), {},
                                     {{"low", "-2"}, {"high", "2"}, {"shape", "(30,)"}}, {}))) {
    EXPECT_TRUE(x >= -2 && x < 2) << x;
  }
}

}  // namespace
}  // namespace nanomx::ops
