// Every operator against a plain reference loop, for every dtype it supports, including
// broadcasting shapes and 0-size arrays; attribute and shape errors; in-place outputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "nanomx/error.h"
#include "test_util.h"

namespace nanomx {
namespace {

using ops::Attrs;
using ops::invoke;
using test::error_of;
using test::expect_close;
using test::make;
using test::random_values;
using test::values_of;

NDArray run(const std::string& op, std::vector<NDArray> in, const Attrs& attrs = {}) {
  return invoke(op, in, attrs)[0];
}

std::vector<int64_t> unravel(int64_t i, const Shape& s) {
  std::vector<int64_t> idx(static_cast<size_t>(s.ndim()));
  for (int d = s.ndim() - 1; d >= 0; --d) {
    idx[static_cast<size_t>(d)] = i % s[d];
    i /= s[d];
  }
  return idx;
}

int64_t ravel(const std::vector<int64_t>& idx, const Shape& s) {
  int64_t i = 0;
  for (int d = 0; d < s.ndim(); ++d) i = i * s[d] + idx[static_cast<size_t>(d)];
  return i;
}

// Reference arithmetic: integers in int64 then wrapped (division truncates, by zero gives 0);
// floats in double, rounded once.
template <typename T>
T ref_arith(char op, T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    const int64_t x = a, y = b;
    int64_t r = 0;
    if (op == '+') r = x + y;
    if (op == '-') r = x - y;
    if (op == '*') r = x * y;
    if (op == '/') r = y == 0 ? 0 : x / y;
    return static_cast<T>(r);
  } else {
    const double x = to_double(a), y = to_double(b);
    double r = 0;
    if (op == '+') r = x + y;
    if (op == '-') r = x - y;
    if (op == '*') r = x * y;
    if (op == '/') r = x / y;
    return from_double<T>(r);
  }
}

template <typename T>
double tol() {
  if constexpr (std::is_same_v<T, half>) return 2e-3;
  if constexpr (std::is_same_v<T, float>) return 1e-5;
  return 1e-12;
}

template <typename T>
class OpsTyped : public ::testing::Test {};
TYPED_TEST_SUITE(OpsTyped, test::AllTypes);

TYPED_TEST(OpsTyped, BroadcastArithmetic) {
  using T = TypeParam;
  std::mt19937 rng(1);
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{3, 4}, {3, 4}}, {{3, 1}, {1, 4}},       {{2, 3, 4}, {4}}, {{5}, {1}},
      {{0, 3}, {1, 3}}, {{2, 1, 3}, {2, 4, 1}}, {{1}, {2, 2}}};
  for (const auto& [sa, sb] : cases) {
    const auto va = random_values<T>(sa.size(), rng), vb = random_values<T>(sb.size(), rng, 1, 10);
    const NDArray a = make<T>(sa, va), b = make<T>(sb, vb);
    for (auto [name, op] : {std::pair{"broadcast_add", '+'}, std::pair{"broadcast_sub", '-'},
                            std::pair{"broadcast_mul", '*'}, std::pair{"broadcast_div", '/'}}) {
      const NDArray out = run(name, {a, b});
      const int nd = std::max(sa.ndim(), sb.ndim());
      std::vector<int64_t> dims(static_cast<size_t>(nd));
      for (int i = 0; i < nd; ++i) {
        const int ia = i - (nd - sa.ndim()), ib = i - (nd - sb.ndim());
        dims[static_cast<size_t>(i)] = std::max(ia >= 0 ? sa[ia] : 1, ib >= 0 ? sb[ib] : 1);
        if ((ia >= 0 && sa[ia] == 0) || (ib >= 0 && sb[ib] == 0)) dims[static_cast<size_t>(i)] = 0;
      }
      const Shape so(dims);
      ASSERT_EQ(out.shape(), so) << name << " " << sa << " " << sb;
      std::vector<T> want(static_cast<size_t>(so.size()));
      for (int64_t i = 0; i < so.size(); ++i) {
        const auto idx = unravel(i, so);
        std::vector<int64_t> ia, ib;
        for (int d = 0; d < nd; ++d) {
          const int da = d - (nd - sa.ndim()), db = d - (nd - sb.ndim());
          if (da >= 0) ia.push_back(sa[da] == 1 ? 0 : idx[static_cast<size_t>(d)]);
          if (db >= 0) ib.push_back(sb[db] == 1 ? 0 : idx[static_cast<size_t>(d)]);
        }
        want[static_cast<size_t>(i)] = ref_arith<T>(op, va[static_cast<size_t>(ravel(ia, sa))],
                                                    vb[static_cast<size_t>(ravel(ib, sb))]);
      }
      expect_close(values_of<T>(out), want, 0.0, std::string(name) + " " + sa.str() + sb.str());
    }
  }
}

TYPED_TEST(OpsTyped, ScalarArithmetic) {
  using T = TypeParam;
  std::mt19937 rng(2);
  const auto v = random_values<T>(37, rng);
  const NDArray a = make<T>(Shape{37}, v);
  for (double s : {2.0, -3.0, 0.5}) {
    const T st = from_double<T>(s);
    const Attrs attrs = {{"scalar", std::to_string(s)}};
    struct Case {
      const char* name;
      char op;
      bool reversed;
    };
    for (Case c : {Case{"_plus_scalar", '+', false}, Case{"_minus_scalar", '-', false},
                   Case{"_rminus_scalar", '-', true}, Case{"_mul_scalar", '*', false},
                   Case{"_div_scalar", '/', false}, Case{"_rdiv_scalar", '/', true}}) {
      std::vector<T> want;
      for (T x : v)
        want.push_back(c.reversed ? ref_arith<T>(c.op, st, x) : ref_arith<T>(c.op, x, st));
      expect_close(values_of<T>(run(c.name, {a}, attrs)), want, 0.0,
                   std::string(c.name) + " " + std::to_string(s));
    }
  }
}

TYPED_TEST(OpsTyped, UnaryAndClip) {
  using T = TypeParam;
  std::mt19937 rng(3);
  const auto v = random_values<T>(50, rng, 0, 10);
  const NDArray a = make<T>(Shape{5, 10}, v);
  std::vector<T> neg, sq, rt, clipped;
  for (T x : v) {
    neg.push_back(ref_arith<T>('-', from_double<T>(0), x));
    sq.push_back(ref_arith<T>('*', x, x));
    rt.push_back(from_double<T>(std::sqrt(to_double(x))));
    const double d = to_double(x);
    clipped.push_back(d < 2 ? from_double<T>(2) : (d > 7 ? from_double<T>(7) : x));
  }
  expect_close(values_of<T>(run("negative", {a})), neg, 0.0, "negative");
  expect_close(values_of<T>(run("square", {a})), sq, 0.0, "square");
  expect_close(values_of<T>(run("sqrt", {a})), rt, 0.0, "sqrt");
  expect_close(values_of<T>(run("clip", {a}, {{"a_min", "2"}, {"a_max", "7"}})), clipped, 0.0,
               "clip");
}

template <typename From>
void check_cast_to_all(const NDArray& a, const std::vector<From>& v) {
  for (int code = 0; code <= 6; ++code) {
    const DType to = static_cast<DType>(code);
    const NDArray out = run("Cast", {a}, {{"dtype", dtype_name(to)}});
    ASSERT_EQ(out.dtype(), to);
    dispatch_dtype(to, [&](auto tag) {
      using To = decltype(tag);
      std::vector<To> want;
      for (From x : v) {
        if constexpr (std::is_integral_v<To> && std::is_integral_v<From>) {
          want.push_back(static_cast<To>(static_cast<int64_t>(x)));
        } else {
          want.push_back(from_double<To>(to_double(x)));
        }
      }
      expect_close(values_of<To>(out), want, 0.0, std::string("Cast to ") + dtype_name(to));
      // _copyto into an array of another dtype converts the same way.
      NDArray dst(a.shape(), Context::cpu(0), to);
      const NDArray outs[] = {dst};
      const NDArray ins[] = {a};
      invoke("_copyto", ins, {}, outs);
      expect_close(values_of<To>(dst), want, 0.0, std::string("_copyto to ") + dtype_name(to));
    });
  }
}

TYPED_TEST(OpsTyped, CastAndCopyToEveryDType) {
  using T = TypeParam;
  std::mt19937 rng(4);
  const auto v = random_values<T>(23, rng, -100, 100);
  check_cast_to_all<T>(make<T>(Shape{23}, v), v);
}

TYPED_TEST(OpsTyped, Fills) {
  using T = TypeParam;
  const std::string dt = dtype_name(test::dtype_of<T>());
  const NDArray f = run("_full", {}, {{"shape", "(2, 3)"}, {"value", "3.7"}, {"dtype", dt}});
  EXPECT_EQ(f.shape(), (Shape{2, 3}));
  expect_close(values_of<T>(f), std::vector<T>(6, from_double<T>(3.7)), 0.0, "_full");
  expect_close(values_of<T>(run("_zeros", {}, {{"shape", "(4,)"}, {"dtype", dt}})),
               std::vector<T>(4, from_double<T>(0)), 0.0, "_zeros");
  expect_close(values_of<T>(run("_ones", {}, {{"shape", "(1,2)"}, {"dtype", dt}})),
               std::vector<T>(2, from_double<T>(1)), 0.0, "_ones");
  EXPECT_EQ(run("_zeros", {}, {{"shape", "(0,3)"}, {"dtype", dt}}).size(), 0);
  // Into a given array without 'shape': the array's shape and dtype.
  NDArray given(Shape{3}, Context::cpu(0), test::dtype_of<T>());
  const NDArray outs[] = {given};
  invoke("_full", {}, {{"value", "2"}}, outs);
  expect_close(values_of<T>(given), std::vector<T>(3, from_double<T>(2)), 0.0, "_full into");
}

// Reference gather: out[idx] = in[map(idx)].
template <typename T, typename Map>
std::vector<T> ref_gather(const std::vector<T>& in, const Shape& in_shape, const Shape& out_shape,
                          Map map) {
  std::vector<T> out;
  for (int64_t i = 0; i < out_shape.size(); ++i) {
    out.push_back(in[static_cast<size_t>(ravel(map(unravel(i, out_shape)), in_shape))]);
  }
  return out;
}

TYPED_TEST(OpsTyped, LayoutOps) {
  using T = TypeParam;
  std::mt19937 rng(5);
  const Shape s{3, 4, 2, 3};
  const auto v = random_values<T>(s.size(), rng);
  const NDArray a = make<T>(s, v);

  // slice with None (the profiler_ndarray example): arr[:, 1:3]
  NDArray sub = run("slice", {a}, {{"begin", "(None, 1)"}, {"end", "(None, 3)"}});
  ASSERT_EQ(sub.shape(), (Shape{3, 2, 2, 3}));
  expect_close(values_of<T>(sub),
               ref_gather(v, s, sub.shape(),
                          [](auto idx) {
                            idx[1] += 1;
                            return idx;
                          }),
               0.0, "slice");
  EXPECT_FALSE(sub.same_storage(a));
  // Negative step with open ends: arr[::-1, 3:0:-2]
  NDArray rev =
      run("slice", {a}, {{"begin", "(None, 3)"}, {"end", "(None, 0)"}, {"step", "(-1, -2)"}});
  ASSERT_EQ(rev.shape(), (Shape{3, 2, 2, 3}));
  expect_close(values_of<T>(rev),
               ref_gather(v, s, rev.shape(),
                          [](auto idx) {
                            idx[0] = 2 - idx[0];
                            idx[1] = 3 - 2 * idx[1];
                            return idx;
                          }),
               0.0, "slice step");
  // slice_axis
  NDArray sa = run("slice_axis", {a}, {{"axis", "-1"}, {"begin", "1"}, {"end", "None"}});
  ASSERT_EQ(sa.shape(), (Shape{3, 4, 2, 2}));
  expect_close(values_of<T>(sa),
               ref_gather(v, s, sa.shape(),
                          [](auto idx) {
                            idx[3] += 1;
                            return idx;
                          }),
               0.0, "slice_axis");
  // transpose (default: reversed axes) and explicit axes
  NDArray tr = run("transpose", {a});
  ASSERT_EQ(tr.shape(), (Shape{3, 2, 4, 3}));
  expect_close(values_of<T>(tr),
               ref_gather(v, s, tr.shape(),
                          [](auto idx) {
                            std::reverse(idx.begin(), idx.end());
                            return idx;
                          }),
               0.0, "transpose");
  NDArray tr2 = run("transpose", {a}, {{"axes", "(1, 0, 3, 2)"}});
  expect_close(values_of<T>(tr2),
               ref_gather(v, s, tr2.shape(),
                          [](auto idx) {
                            return std::vector<int64_t>{idx[1], idx[0], idx[3], idx[2]};
                          }),
               0.0, "transpose axes");
  // reverse
  NDArray rv = run("reverse", {a}, {{"axis", "(0, 2)"}});
  expect_close(values_of<T>(rv),
               ref_gather(v, s, s,
                          [](auto idx) {
                            idx[0] = 2 - idx[0];
                            idx[2] = 1 - idx[2];
                            return idx;
                          }),
               0.0, "reverse");
  // broadcast_to
  const auto vb = random_values<T>(6, rng);
  NDArray b = make<T>(Shape{2, 1, 3}, vb);
  NDArray bt = run("broadcast_to", {b}, {{"shape", "(2, 4, 0)"}});
  ASSERT_EQ(bt.shape(), (Shape{2, 4, 3}));
  expect_close(values_of<T>(bt),
               ref_gather(vb, Shape{2, 1, 3}, bt.shape(),
                          [](auto idx) {
                            idx[1] = 0;
                            return idx;
                          }),
               0.0, "broadcast_to");
  // Reshape codes
  EXPECT_EQ(run("Reshape", {a}, {{"shape", "(0, -1)"}}).shape(), (Shape{3, 24}));
  EXPECT_EQ(run("Reshape", {a}, {{"shape", "(-3, -2)"}}).shape(), (Shape{12, 2, 3}));
  EXPECT_EQ(run("Reshape", {a}, {{"shape", "(-4, 1, 3, -2)"}}).shape(), (Shape{1, 3, 4, 2, 3}));
  EXPECT_EQ(run("reshape", {a}, {{"shape", "(-1, 6)"}, {"reverse", "True"}}).shape(),
            (Shape{12, 6}));
  expect_close(values_of<T>(run("Reshape", {a}, {{"shape", "(72,)"}})), v, 0.0, "Reshape");
}

TYPED_TEST(OpsTyped, SliceAssign) {
  using T = TypeParam;
  std::mt19937 rng(6);
  const auto v = random_values<T>(10, rng);
  const auto r = random_values<T>(5, rng);
  NDArray a = make<T>(Shape{10}, v);
  NDArray rhs = make<T>(Shape{5}, r);
  const Attrs range = {{"begin", "(3,)"}, {"end", "(8,)"}, {"step", "(1,)"}};
  std::vector<T> want = v;
  std::copy(r.begin(), r.end(), want.begin() + 3);
  // New array: lhs unchanged.
  expect_close(values_of<T>(run("_slice_assign", {a, rhs}, range)), want, 0.0, "_slice_assign");
  expect_close(values_of<T>(a), v, 0.0, "_slice_assign leaves lhs");
  // In place (out=lhs), as A[3:8] = x.
  const NDArray ins[] = {a, rhs};
  const NDArray outs[] = {a};
  invoke("_slice_assign", ins, range, outs);
  expect_close(values_of<T>(a), want, 0.0, "_slice_assign in place");
  // Scalar form on a 2-D strided region.
  NDArray m = make<T>(Shape{3, 4}, random_values<T>(12, rng));
  auto mv = values_of<T>(m);
  NDArray filled =
      run("_slice_assign_scalar", {m},
          {{"scalar", "4"}, {"begin", "(0, 1)"}, {"end", "(3, 4)"}, {"step", "(2, 2)"}});
  for (int i : {0, 2}) {
    for (int j : {1, 3}) mv[static_cast<size_t>(i * 4 + j)] = from_double<T>(4);
  }
  expect_close(values_of<T>(filled), mv, 0.0, "_slice_assign_scalar");
  EXPECT_NE(error_of([&] {
              run("_slice_assign", {a, make<T>(Shape{4}, std::vector<T>(4))}, range);
            }).find("(4,)"),
            std::string::npos);
}

template <typename T>
std::vector<T> ref_reduce(const std::vector<T>& v, const Shape& s, const std::vector<bool>& red,
                          const std::string& op, Shape* out_shape, bool keepdims) {
  std::vector<int64_t> kept, out;
  for (int d = 0; d < s.ndim(); ++d) {
    kept.push_back(red[static_cast<size_t>(d)] ? 1 : s[d]);
    if (!red[static_cast<size_t>(d)] || keepdims) out.push_back(kept.back());
  }
  if (out.empty()) out.push_back(1);
  *out_shape = Shape(out);
  const Shape ks(kept);
  std::vector<double> acc(static_cast<size_t>(ks.size()),
                          op == "max" ? -INFINITY : (op == "min" ? INFINITY : 0.0));
  std::vector<int64_t> iacc(static_cast<size_t>(ks.size()), 0);
  for (int64_t i = 0; i < s.size(); ++i) {
    auto idx = unravel(i, s);
    for (int d = 0; d < s.ndim(); ++d) {
      if (red[static_cast<size_t>(d)]) idx[static_cast<size_t>(d)] = 0;
    }
    const size_t o = static_cast<size_t>(ravel(idx, ks));
    const double x = to_double(v[static_cast<size_t>(i)]);
    if (op == "sum") acc[o] += x;
    if (op == "max") acc[o] = std::max(acc[o], x);
    if (op == "min") acc[o] = std::min(acc[o], x);
    if (op == "norm") acc[o] += x * x;
    if constexpr (std::is_integral_v<T>) iacc[o] += static_cast<int64_t>(v[static_cast<size_t>(i)]);
  }
  std::vector<T> result;
  for (size_t o = 0; o < acc.size(); ++o) {
    if (op == "norm") {
      result.push_back(from_double<T>(std::sqrt(acc[o])));
    } else if (op == "sum" && std::is_integral_v<T>) {
      result.push_back(static_cast<T>(iacc[o]));
    } else {
      result.push_back(from_double<T>(acc[o]));
    }
  }
  return result;
}

TYPED_TEST(OpsTyped, Reductions) {
  using T = TypeParam;
  std::mt19937 rng(7);
  for (int trial = 0; trial < 40; ++trial) {
    const int nd = 1 + static_cast<int>(rng() % 4);
    std::vector<int64_t> dims;
    for (int d = 0; d < nd; ++d) dims.push_back(1 + static_cast<int64_t>(rng() % 5));
    const Shape s(dims);
    std::vector<bool> red(static_cast<size_t>(nd));
    std::string axes = "(";
    for (int d = 0; d < nd; ++d) {
      red[static_cast<size_t>(d)] = rng() % 2;
      if (red[static_cast<size_t>(d)]) axes += std::to_string(d - (trial % 2 ? nd : 0)) + ",";
    }
    axes += ")";
    if (axes == "()") red.assign(static_cast<size_t>(nd), true);  // () = every axis
    const bool keepdims = trial % 3 == 0;
    const auto v = random_values<T>(s.size(), rng);
    const NDArray a = make<T>(s, v);
    for (const std::string op : {"sum", "max", "min", "norm"}) {
      if (op == "norm" && std::is_integral_v<T>) continue;
      Shape want_shape;
      const auto want = ref_reduce(v, s, red, op, &want_shape, keepdims);
      const NDArray out = run(op, {a}, {{"axis", axes}, {"keepdims", keepdims ? "1" : "0"}});
      ASSERT_EQ(out.shape(), want_shape) << op << " " << s << " axis=" << axes;
      expect_close(values_of<T>(out), want, std::is_same_v<T, half> ? 2e-3 : 1e-5,
                   op + " " + s.str() + " axis=" + axes);
    }
  }
  // Full reduction without axis: MXNet 1.x's (1,) shape; 0-size sum is 0.
  const NDArray a = make<T>(Shape{2, 3}, random_values<T>(6, rng));
  EXPECT_EQ(run("sum", {a}).shape(), (Shape{1}));
  expect_close(values_of<T>(run("sum", {NDArray(Shape{0, 3}, Context::cpu(0), test::dtype_of<T>())},
                                {{"axis", "0"}})),
               std::vector<T>(3, from_double<T>(0)), 0.0, "0-size sum");
  EXPECT_NE(error_of([] {
              run("max", {NDArray(Shape{0}, Context::cpu(0), test::dtype_of<T>())});
            }).find("zero-size"),
            std::string::npos);
}

TYPED_TEST(OpsTyped, Dot) {
  using T = TypeParam;
  std::mt19937 rng(8);
  const double rtol = std::is_same_v<T, half> ? 5e-3 : (std::is_same_v<T, float> ? 1e-5 : 1e-12);
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      const int64_t m = 3, k = 4, n = 5;
      const Shape sa = ta ? Shape{k, m} : Shape{m, k}, sb = tb ? Shape{n, k} : Shape{k, n};
      const auto va = random_values<T>(sa.size(), rng, -3, 3),
                 vb = random_values<T>(sb.size(), rng, -3, 3);
      const NDArray out =
          run("dot", {make<T>(sa, va), make<T>(sb, vb)},
              {{"transpose_a", ta ? "True" : "False"}, {"transpose_b", tb ? "True" : "False"}});
      ASSERT_EQ(out.shape(), (Shape{m, n}));
      std::vector<T> want;
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          double acc = 0;
          int64_t iacc = 0;
          for (int64_t p = 0; p < k; ++p) {
            const T x = va[static_cast<size_t>(ta ? p * m + i : i * k + p)];
            const T y = vb[static_cast<size_t>(tb ? j * k + p : p * n + j)];
            acc += to_double(x) * to_double(y);
            if constexpr (std::is_integral_v<T>)
              iacc += static_cast<int64_t>(x) * static_cast<int64_t>(y);
          }
          if constexpr (std::is_integral_v<T>) {
            want.push_back(static_cast<T>(iacc));
          } else {
            want.push_back(from_double<T>(acc));
          }
        }
      }
      expect_close(values_of<T>(out), want, rtol,
                   "dot ta=" + std::to_string(ta) + " tb=" + std::to_string(tb));
    }
  }
  // Vector . vector gives (1,); N-d lhs contracts its last axis; K = 0 gives zeros.
  const NDArray v1 = make<T>(Shape{3}, {from_double<T>(1), from_double<T>(2), from_double<T>(3)});
  const NDArray dv = run("dot", {v1, v1});
  EXPECT_EQ(dv.shape(), (Shape{1}));
  EXPECT_EQ(to_double(values_of<T>(dv)[0]), 14.0);
  const NDArray nd = run("dot", {make<T>(Shape{2, 2, 3}, random_values<T>(12, rng)),
                                 make<T>(Shape{3, 4}, random_values<T>(12, rng))});
  EXPECT_EQ(nd.shape(), (Shape{2, 2, 4}));
  const NDArray z = run("dot", {NDArray(Shape{2, 0}, Context::cpu(0), test::dtype_of<T>()),
                                NDArray(Shape{0, 3}, Context::cpu(0), test::dtype_of<T>())});
  expect_close(values_of<T>(z), std::vector<T>(6, from_double<T>(0)), 0.0, "dot K=0");
}

TYPED_TEST(OpsTyped, PickFillOnehot) {
  using T = TypeParam;
  std::mt19937 rng(9);
  const int64_t rows = 7, cols = 5;
  const auto v = random_values<T>(rows * cols, rng);
  const NDArray data = make<T>(Shape{rows, cols}, v);
  std::vector<float> idx;
  for (int64_t i = 0; i < rows; ++i) idx.push_back(static_cast<float>(rng() % (cols + 2)) - 1);
  const NDArray index = make<float>(Shape{rows}, idx);
  std::vector<T> want;
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t j =
        std::clamp<int64_t>(static_cast<int64_t>(idx[static_cast<size_t>(i)]), 0, cols - 1);
    want.push_back(v[static_cast<size_t>(i * cols + j)]);
  }
  expect_close(values_of<T>(run("choose_element_0index", {data, index})), want, 0.0, "pick clip");
  want.clear();
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t j = ((static_cast<int64_t>(idx[static_cast<size_t>(i)]) % cols) + cols) % cols;
    want.push_back(v[static_cast<size_t>(i * cols + j)]);
  }
  const NDArray wrapped = run("pick", {data, index}, {{"mode", "wrap"}, {"keepdims", "True"}});
  EXPECT_EQ(wrapped.shape(), (Shape{rows, 1}));
  expect_close(values_of<T>(wrapped), want, 0.0, "pick wrap");
  // pick along axis 0
  std::vector<T> col_idx;
  for (int64_t j = 0; j < cols; ++j)
    col_idx.push_back(from_double<T>(static_cast<double>(j % rows)));
  const NDArray p0 = run("pick", {data, make<T>(Shape{cols}, col_idx)}, {{"axis", "0"}});
  for (int64_t j = 0; j < cols; ++j) {
    EXPECT_TRUE(test::same_bits(values_of<T>(p0)[static_cast<size_t>(j)],
                                v[static_cast<size_t>((j % rows) * cols + j)]));
  }

  // fill_element_0index and _onehot_encode with in-range indices
  std::vector<T> fidx, fval;
  for (int64_t i = 0; i < rows; ++i) {
    fidx.push_back(from_double<T>(static_cast<double>(rng() % cols)));
    fval.push_back(from_double<T>(static_cast<double>(rng() % 20)));
  }
  const NDArray filled =
      run("fill_element_0index", {data, make<T>(Shape{rows}, fval), make<T>(Shape{rows}, fidx)});
  want = v;
  for (int64_t i = 0; i < rows; ++i) {
    want[static_cast<size_t>(i * cols +
                             static_cast<int64_t>(to_double(fidx[static_cast<size_t>(i)])))] =
        fval[static_cast<size_t>(i)];
  }
  expect_close(values_of<T>(filled), want, 0.0, "fill_element_0index");
  NDArray onehot(Shape{rows, cols}, Context::cpu(0), test::dtype_of<T>());
  const NDArray oh_in[] = {make<T>(Shape{rows}, fidx), onehot};
  const NDArray oh_out[] = {onehot};
  invoke("_onehot_encode", oh_in, {}, oh_out);
  want.assign(static_cast<size_t>(rows * cols), from_double<T>(0));
  for (int64_t i = 0; i < rows; ++i) {
    want[static_cast<size_t>(i * cols +
                             static_cast<int64_t>(to_double(fidx[static_cast<size_t>(i)])))] =
        from_double<T>(1);
  }
  expect_close(values_of<T>(onehot), want, 0.0, "_onehot_encode");
}

TEST(Ops, InPlaceAndAliasedOutputs) {
  // The profiler_ndarray scalar sequence: d -= c * 2 / 3 * 6.0; c += 0.5
  NDArray c(Shape{10, 10}, Context::cpu(0)), d(Shape{10, 10}, Context::cpu(0));
  const NDArray c_out[] = {c}, d_out[] = {d};
  invoke("_full", {}, {{"shape", "(10,10)"}, {"value", "0.5"}}, c_out);
  invoke("_full", {}, {{"shape", "(10,10)"}, {"value", "1.0"}}, d_out);
  NDArray t =
      run("_mul_scalar",
          {run("_div_scalar", {run("_mul_scalar", {c}, {{"scalar", "2"}})}, {{"scalar", "3"}})},
          {{"scalar", "6.0"}});
  const NDArray sub_in[] = {d, t};
  invoke("broadcast_sub", sub_in, {}, d_out);
  const NDArray plus_in[] = {c};
  invoke("_plus_scalar", plus_in, {{"scalar", "0.5"}}, c_out);
  EXPECT_NEAR(values_of<float>(run("sum", {c}))[0], 100.0f, 1e-4);
  EXPECT_NEAR(values_of<float>(run("sum", {d}))[0], -100.0f, 1e-4);
  // transpose into its own input goes through a temporary
  NDArray m = make<float>(Shape{2, 2}, {1, 2, 3, 4});
  const NDArray m_in[] = {m}, m_out[] = {m};
  invoke("transpose", m_in, {}, m_out);
  EXPECT_EQ(values_of<float>(m), (std::vector<float>{1, 3, 2, 4}));
  // a view that overlaps the output at another offset also goes through a temporary
  NDArray a = make<float>(Shape{4}, {1, 2, 3, 4});
  const NDArray v_in[] = {a.slice(0, 2), a.slice(0, 2)}, v_out[] = {a.slice(2, 4)};
  invoke("broadcast_add", v_in, {}, v_out);
  EXPECT_EQ(values_of<float>(a), (std::vector<float>{1, 2, 2, 4}));
}

TEST(Ops, ErrorsNameOpArgumentAndShapes) {
  const NDArray a(Shape{2, 3}, Context::cpu(0)), b(Shape{4, 3}, Context::cpu(0));
  std::string msg = error_of([&] { run("broadcast_add", {a, b}); });
  EXPECT_NE(msg.find("broadcast_add"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(2,3)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(4,3)"), std::string::npos) << msg;
  msg = error_of([&] { run("dot", {a, b}); });
  EXPECT_NE(msg.find("dot"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'rhs' (4,3)"), std::string::npos) << msg;
  msg = error_of([&] { run("sum", {a}, {{"axes", "1"}}); });
  EXPECT_NE(msg.find("unknown attribute 'axes'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("keepdims"), std::string::npos) << msg;
  msg = error_of([&] { run("clip", {a}, {{"a_min", "0"}}); });
  EXPECT_NE(msg.find("'a_max' is missing"), std::string::npos) << msg;
  msg = error_of([&] { run("_plus_scalar", {a}, {{"scalar", "abc"}}); });
  EXPECT_NE(msg.find("'scalar' = 'abc'"), std::string::npos) << msg;
  msg = error_of([&] { run("negative", {a, a}); });
  EXPECT_NE(msg.find("expected 1 input"), std::string::npos) << msg;
  msg = error_of([&] { run("no_such_op", {a}); });
  EXPECT_NE(msg.find("unknown operator 'no_such_op'"), std::string::npos) << msg;
  msg = error_of([&] {
    run("broadcast_add", {a, NDArray(Shape{2, 3}, Context::cpu(0), DType::kInt32)});
  });
  EXPECT_NE(msg.find("int32"), std::string::npos) << msg;
  msg = error_of([&] { run("sum", {a}, {{"axis", "(0, 5)"}}); });
  EXPECT_NE(msg.find("axis 5"), std::string::npos) << msg;
  msg = error_of([&] { run("broadcast_to", {a}, {{"shape", "(4, 3)"}}); });
  EXPECT_NE(msg.find("(2,3)"), std::string::npos) << msg;
  msg = error_of([&] { run("Reshape", {a}, {{"shape", "(4, 2)"}}); });
  EXPECT_NE(msg.find("(4,2)"), std::string::npos) << msg;
  msg = error_of([&] { run("transpose", {a}, {{"axes", "(0, 0)"}}); });
  EXPECT_NE(msg.find("permutation"), std::string::npos) << msg;
  NDArray wrong(Shape{3, 3}, Context::cpu(0));
  const NDArray ins[] = {a}, outs[] = {wrong};
  msg = error_of([&] { invoke("negative", ins, {}, outs); });
  EXPECT_NE(msg.find("(3,3)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(2,3)"), std::string::npos) << msg;
  msg = error_of([&] { run("negative", {NDArray()}); });
  EXPECT_NE(msg.find("'data' is a none array"), std::string::npos) << msg;
}

TEST(Ops, KernelErrorsSurfaceAtTheNextWait) {
  const NDArray lhs = make<float>(Shape{2, 3}, std::vector<float>(6, 0.0f));
  const NDArray val = make<float>(Shape{2}, {1, 2});
  const NDArray idx = make<float>(Shape{2}, {0, 9});  // 9 is out of range
  NDArray out = run("fill_element_0index", {lhs, val, idx});
  const std::string msg = error_of([&] { out.wait_to_read(); });
  EXPECT_NE(msg.find("TernaryOp"), std::string::npos) << msg;
  EXPECT_NE(msg.find("index 9"), std::string::npos) << msg;
  EXPECT_THROW(engine::Engine::get().wait_all(), Error);
  // Later ops still work.
  EXPECT_EQ(values_of<float>(run("_plus_scalar", {val}, {{"scalar", "1"}})),
            (std::vector<float>{2, 3}));
}

TEST(Ops, RandomIsSeededAndInRange) {
  const Attrs u = {{"low", "-10"}, {"high", "10"}, {"shape", "(1000,)"}};
  ops::seed_random(42);
  const auto a = values_of<float>(run("_random_uniform", {}, u));
  ops::seed_random(42);
  const auto b = values_of<float>(run("_random_uniform", {}, u));
  EXPECT_EQ(a, b);
  for (float x : a) {
    EXPECT_GE(x, -10.0f);
    EXPECT_LE(x, 10.0f);
  }
  EXPECT_NE(values_of<float>(run("_random_uniform", {}, u)), a);
  ops::seed_random(7);
  const auto n = values_of<double>(
      run("_random_normal", {},
          {{"loc", "3"}, {"scale", "2"}, {"shape", "(20001,)"}, {"dtype", "float64"}}));
  const double mean = std::accumulate(n.begin(), n.end(), 0.0) / static_cast<double>(n.size());
  double var = 0;
  for (double x : n) var += (x - mean) * (x - mean);
  var /= static_cast<double>(n.size());
  EXPECT_NEAR(mean, 3.0, 0.1);
  EXPECT_NEAR(std::sqrt(var), 2.0, 0.1);
  EXPECT_NE(error_of([&] {
              run("_random_uniform", {}, {{"shape", "(2,)"}, {"dtype", "int32"}});
            }).find("int32"),
            std::string::npos);
}

TEST(Ops, RegistryHasTheProfilerExampleOps) {
  const auto names = ops::list_op_names();
  for (const char* name : {"broadcast_add",
                           "broadcast_sub",
                           "broadcast_mul",
                           "broadcast_div",
                           "sqrt",
                           "square",
                           "norm",
                           "slice",
                           "crop",
                           "broadcast_to",
                           "_full",
                           "_slice_assign",
                           "_mul_scalar",
                           "_div_scalar",
                           "_plus_scalar",
                           "_copyto",
                           "clip",
                           "_random_uniform",
                           "dot",
                           "pick",
                           "choose_element_0index",
                           "fill_element_0index",
                           "_onehot_encode",
                           "sum",
                           "max",
                           "min",
                           "_minus_scalar",
                           "_rminus_scalar",
                           "_rdiv_scalar",
                           "negative",
                           "slice_axis",
                           "_slice_assign_scalar",
                           "_zeros",
                           "_ones",
                           "Cast",
                           "reshape",
                           "transpose",
                           "reverse",
                           "_random_normal"}) {
    EXPECT_TRUE(std::binary_search(names.begin(), names.end(), name)) << name;
  }
}

}  // namespace
}  // namespace nanomx
