// The symbol layer: graph building, MXNet's input naming, listing, shape and dtype inference
// (partial and errors), the JSON graph format byte for byte, a hand-written MXNet 1.x file,
// debug_str, the C API over symbol handles, and the layer operators' CPU forward kernels.
#include "symbol/symbol.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "nanomx/c_api.h"
#include "nanomx/ops.h"

namespace nanomx::symbol {
namespace {

using ops::PartialShape;

Symbol op(const std::string& name, const std::vector<Symbol>& args, const Kwargs& attrs,
          const std::string& node_name,
          const std::vector<std::pair<std::string, Symbol>>& kwargs = {}) {
  Symbol s = Symbol::atomic(ops::get_op(name), attrs);
  s.compose(args, kwargs, node_name);
  return s;
}

Symbol mlp() {
  Symbol data = Symbol::variable("data");
  Symbol fc = op("FullyConnected", {data}, {{"num_hidden", "10"}}, "fc1");
  return op("SoftmaxOutput", {fc}, {}, "softmax");
}

const char* kDotJson = R"({
  "nodes": [
    {
      "op": "null", 
      "name": "A", 
      "inputs": []
    }, 
    {
      "op": "null", 
      "name": "B", 
      "inputs": []
    }, 
    {
      "op": "dot", 
      "name": "dot0", 
      "inputs": [[0, 0, 0], [1, 0, 0]]
    }
  ], 
  "arg_nodes": [0, 1], 
  "node_row_ptr": [0, 1, 2, 3], 
  "heads": [[2, 0, 0]], 
  "attrs": {"mxnet_version": ["int", 10901]}
})";

const char* kMlpJson = R"({
  "nodes": [
    {
      "op": "null", 
      "name": "data", 
      "inputs": []
    }, 
    {
      "op": "null", 
      "name": "fc1_weight", 
      "attrs": {"num_hidden": "10"}, 
      "inputs": []
    }, 
    {
      "op": "null", 
      "name": "fc1_bias", 
      "attrs": {"num_hidden": "10"}, 
      "inputs": []
    }, 
    {
      "op": "FullyConnected", 
      "name": "fc1", 
      "attrs": {"num_hidden": "10"}, 
      "inputs": [[0, 0, 0], [1, 0, 0], [2, 0, 0]]
    }, 
    {
      "op": "null", 
      "name": "softmax_label", 
      "inputs": []
    }, 
    {
      "op": "SoftmaxOutput", 
      "name": "softmax", 
      "inputs": [[3, 0, 0], [4, 0, 0]]
    }
  ], 
  "arg_nodes": [0, 1, 2, 4], 
  "node_row_ptr": [0, 1, 2, 3, 4, 5, 6], 
  "heads": [[5, 0, 0]], 
  "attrs": {"mxnet_version": ["int", 10901]}
})";

TEST(SymbolGraph, ComposeNamesMissingInputsAfterTheNode) {
  Symbol s = mlp();
  EXPECT_EQ(s.list_arguments(),
            (std::vector<std::string>{"data", "fc1_weight", "fc1_bias", "softmax_label"}));
  EXPECT_EQ(s.list_outputs(), std::vector<std::string>{"softmax_output"});
  EXPECT_TRUE(s.list_auxiliary_states().empty());
  EXPECT_EQ(s.internals().list_outputs(),
            (std::vector<std::string>{"data", "fc1_weight", "fc1_bias", "fc1_output",
                                      "softmax_label", "softmax_output"}));
  // MXNet's quirk: the created variables carry the operator's attributes.
  Symbol w = s.internals()[1];
  EXPECT_EQ(w.get_attr("num_hidden"), std::optional<std::string>("10"));
  EXPECT_EQ(s.children().list_outputs(), (std::vector<std::string>{"fc1_output", "softmax_label"}));
}

TEST(SymbolGraph, NoBiasAndKeywordInputs) {
  Symbol data = Symbol::variable("x");
  Symbol w = Symbol::variable("w");
  Symbol fc = op("FullyConnected", {data}, {{"num_hidden", "4"}, {"no_bias", "True"}}, "fc",
                 {{"weight", w}});
  EXPECT_EQ(fc.list_arguments(), (std::vector<std::string>{"x", "w"}));
  EXPECT_THROW(op("FullyConnected", {data}, {{"num_hidden", "4"}}, "f", {{"wieght", w}}), Error);
  try {
    op("Activation", {data}, {{"act_type", "relu"}}, "a", {{"foo", w}});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Symbol.ComposeKeyword argument name foo not found.\n"
                                         "Candidate arguments:\n\t[0]data"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(Symbol::atomic(ops::get_op("FullyConnected"), {}), Error);  // num_hidden missing
  EXPECT_THROW(data.compose({w}, {}, "v"), Error);  // a variable cannot be composed
}

TEST(SymbolGraph, GroupIndexCopyAndAttributes) {
  Symbol a = Symbol::variable("a");
  Symbol b = Symbol::variable("b");
  Symbol g = Symbol::group({a, b});
  EXPECT_EQ(g.list_outputs(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(g[1].list_outputs(), std::vector<std::string>{"b"});
  EXPECT_THROW(g[2], Error);
  a.set_attr("lr_mult", "2");
  EXPECT_EQ(a.get_attr("__lr_mult__"), std::optional<std::string>("2"));
  EXPECT_EQ(a.get_attr("lr_mult"), std::optional<std::string>("2"));
  EXPECT_EQ(a.list_attr(false).size(), 2u);  // __lr_mult__ and lr_mult
  EXPECT_THROW(a.set_attr("weight_lr_mult", "2"), Error);
  Symbol s = mlp();
  Symbol c = s.copy();
  c.set_attr("__mirror_stage__", "1");
  EXPECT_FALSE(s.get_attr("__mirror_stage__"));
}

TEST(SymbolInfer, ShapesFlowForwardAndBackward) {
  Symbol s = mlp();
  ShapeResult r = infer_shape(s, {{"data", Shape{128, 784}}});
  ASSERT_TRUE(r.complete);
  EXPECT_EQ(r.args[1], PartialShape(Shape{10, 784}));
  EXPECT_EQ(r.args[2], PartialShape(Shape{10}));
  EXPECT_EQ(r.args[3], PartialShape(Shape{128}));
  EXPECT_EQ(r.outputs[0], PartialShape(Shape{128, 10}));
  // Partial: only the weight given, the batch unknown.
  ShapeResult p = infer_shape(s, {{"fc1_weight", Shape{10, 784}}});
  EXPECT_FALSE(p.complete);
  EXPECT_FALSE(p.args[0].known());
  // A variable's __shape__ is used when no shape is given.
  Symbol v = Symbol::variable("data", {{"__shape__", "(4, 3)"}});
  Symbol act = op("Activation", {v}, {{"act_type", "relu"}}, "relu1");
  ShapeResult q = infer_shape(act, {});
  ASSERT_TRUE(q.complete);
  EXPECT_EQ(q.outputs[0], PartialShape(Shape{4, 3}));
}

TEST(SymbolInfer, ConflictNamesTheNodeAndShapes) {
  Symbol s = mlp();
  try {
    infer_shape(s, {{"data", Shape{1, 100}}, {"fc1_weight", Shape{10, 99}}});
    FAIL();
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("Error in operator fc1"), std::string::npos) << m;
    EXPECT_NE(m.find("(10,99)"), std::string::npos) << m;
  }
  Symbol a = Symbol::variable("a"), b = Symbol::variable("b");
  Symbol d = op("dot", {a, b}, {}, "dot0");
  try {
    infer_shape(d, {{"a", Shape{2, 3}}, {"b", Shape{4, 5}}});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Error in operator dot0"), std::string::npos);
  }
}

// A conflict found by the graph pass: MXNet's wording, then the operator and the slot.
TEST(SymbolInfer, GraphConflictNamesNodeAndShapes) {
  Symbol x = Symbol::variable("x");
  Symbol a = op("Activation", {x}, {{"act_type", "relu"}}, "a");
  Symbol d = op("dot", {a, Symbol::variable("w")}, {}, "d");
  try {
    infer_type(d, {{"x", DType::kFloat32}, {"w", DType::kFloat64}});
    FAIL();
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("Error in operator d"), std::string::npos) << m;
    EXPECT_NE(m.find("float64"), std::string::npos) << m;
  }
  Symbol s = mlp();
  try {
    infer_shape(s, {{"data", Shape{4, 5}}, {"softmax_label", Shape{3}}});
    FAIL();
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("Error in operator softmax"), std::string::npos) << m;
    EXPECT_NE(m.find("(3,)"), std::string::npos) << m;
  }
}

TEST(SymbolInfer, Types) {
  Symbol s = mlp();
  TypeResult r = infer_type(s, {{"data", DType::kFloat64}});
  ASSERT_TRUE(r.complete);
  for (const auto& t : r.args) EXPECT_EQ(t, DType::kFloat64);
  EXPECT_EQ(r.outputs[0], DType::kFloat64);
  TypeResult none = infer_type(s, {});
  EXPECT_FALSE(none.complete);
}

TEST(SymbolJson, WritesMXNetLayoutByteForByte) {
  Symbol a = Symbol::variable("A"), b = Symbol::variable("B");
  EXPECT_EQ(op("dot", {a, b}, {}, "dot0").to_json(), kDotJson);
  EXPECT_EQ(mlp().to_json(), kMlpJson);
}

TEST(SymbolJson, RoundTripAndLongLists) {
  Symbol x = Symbol::variable("x");
  Symbol s = x;
  for (int i = 0; i < 12; ++i) {
    s = op("Activation", {s}, {{"act_type", "tanh"}, {"__ctx_group__", "g"}},
           "act" + std::to_string(i));
  }
  const std::string json = s.to_json();
  EXPECT_NE(json.find("\"node_row_ptr\": [\n    0, \n    1, "), std::string::npos) << json;
  EXPECT_NE(json.find("\"attrs\": {\n        \"__ctx_group__\": \"g\", \n        \"act_type\": "
                      "\"tanh\"\n      }"),
            std::string::npos)
      << json;
  EXPECT_EQ(Symbol::from_json(json).to_json(), json);
  EXPECT_EQ(Symbol::from_json(kMlpJson).to_json(), kMlpJson);
}

// Written by hand from MXNet's published format: an old file with "param"/"attr" keys, entries
// of two numbers, no node_row_ptr, and a version attribute of 1.4.
TEST(SymbolJson, LoadsAHandWrittenMXNet1xGraph) {
  const char* legacy = R"({
    "nodes": [
      {"op": "null", "name": "data", "inputs": []},
      {"op": "null", "name": "fc1_weight", "attr": {"num_hidden": "128"}, "inputs": []},
      {"op": "null", "name": "fc1_bias", "attr": {"num_hidden": "128"}, "inputs": []},
      {"op": "FullyConnected", "name": "fc1", "param": {"num_hidden": "128", "no_bias": "False"},
       "inputs": [[0, 0], [1, 0], [2, 0]], "backward_source_id": -1},
      {"op": "Activation", "name": "relu1", "attrs": {"act_type": "relu"},
       "inputs": [[3, 0, 0]]},
      {"op": "null", "name": "softmax_label", "inputs": []},
      {"op": "SoftmaxOutput", "name": "softmax", "attrs": {"normalization": "batch"},
       "inputs": [[4, 0, 0], [5, 0, 0]]}
    ],
    "arg_nodes": [0, 1, 2, 5],
    "heads": [[6, 0, 0]],
    "attrs": {"mxnet_version": ["int", 10400]}
  })";
  Symbol s = Symbol::from_json(legacy);
  EXPECT_EQ(s.list_arguments(),
            (std::vector<std::string>{"data", "fc1_weight", "fc1_bias", "softmax_label"}));
  EXPECT_EQ(s.list_outputs(), std::vector<std::string>{"softmax_output"});
  ShapeResult r = infer_shape(s, {{"data", Shape{32, 784}}});
  ASSERT_TRUE(r.complete);
  EXPECT_EQ(r.args[1], PartialShape(Shape{128, 784}));
  EXPECT_EQ(r.args[3], PartialShape(Shape{32}));
}

// Pre-1.9 files keep hidden attributes without underscores, per-input ones on the operator.
TEST(SymbolJson, UpgradesLegacyHiddenKeys) {
  Symbol s = Symbol::from_json(R"({
    "nodes": [
      {"op": "null", "name": "data", "inputs": []},
      {"op": "null", "name": "w", "inputs": []},
      {"op": "FullyConnected", "name": "fc",
       "attr": {"num_hidden": "3", "no_bias": "True", "weight_lr_mult": "2", "ctx_group": "g"},
       "inputs": [[0, 0], [1, 0]]}
    ],
    "arg_nodes": [0, 1],
    "heads": [[2, 0]]
  })");
  EXPECT_EQ(s.get_attr("__ctx_group__"), std::optional<std::string>("g"));
  EXPECT_FALSE(s.get_attr("weight_lr_mult"));
  EXPECT_EQ(s.internals()[1].get_attr("__lr_mult__"), std::optional<std::string>("2"));
}

TEST(SymbolJson, BadFilesAreRefusedWithReasons) {
  auto message = [](const std::string& json) {
    try {
      Symbol::from_json(json);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_NE(message(R"({"nodes": [{"op": "nope", "name": "n", "inputs": []}], "arg_nodes": [],
                       "heads": [[0, 0, 0]]})")
                .find("Failed loading Op n of type nope"),
            std::string::npos);
  EXPECT_NE(message(R"({"nodes": [{"op": "null", "name": "n", "inputs": [], "x": 1}],
                       "arg_nodes": [0], "heads": [[0, 0, 0]]})")
                .find("JSONReader: Unknown field x"),
            std::string::npos);
  EXPECT_NE(message(R"({"nodes": []})").find("arg_nodes"), std::string::npos);
  EXPECT_NE(message(R"({"nodes": [{"op": "null", "name": "n", "inputs": []}], "arg_nodes": [0],
                       "heads": [[3, 0, 0]]})")
                .find("node 3"),
            std::string::npos);
  EXPECT_NE(message("{\"nodes\": [").find("invalid JSON"), std::string::npos);
}

TEST(SymbolPrint, DebugStrLayout) {
  EXPECT_EQ(Symbol::variable("x").debug_str(), "Variable:x\n");
  const std::string s = mlp().debug_str();
  EXPECT_EQ(s.substr(0, 38), "Symbol Outputs:\n\toutput[0]=softmax(0)\n");
  EXPECT_NE(s.find("--------------------\nOp:FullyConnected, Name=fc1\nInputs:\n\targ[0]=data(0) "
                   "version=0\n\targ[1]=fc1_weight(0) version=0\n\targ[2]=fc1_bias(0) "
                   "version=0\nAttrs:\n\tnum_hidden=10\n"),
            std::string::npos)
      << s;
}

// ---- The C API ----
TEST(SymbolCApi, BuildListInferSaveAndRefuseStaleHandles) {
  OpHandle fc_op = nullptr;
  ASSERT_EQ(NNGetOpHandle("FullyConnected", &fc_op), 0);
  SymbolHandle data = nullptr, fc = nullptr;
  ASSERT_EQ(MXSymbolCreateVariable("data", &data), 0);
  const char* keys[] = {"num_hidden"};
  const char* vals[] = {"10"};
  ASSERT_EQ(MXSymbolCreateAtomicSymbol(fc_op, 1, keys, vals, &fc), 0);
  ASSERT_EQ(MXSymbolCompose(fc, "fc1", 1, nullptr, &data), 0);
  uint32_t n = 0;
  const char** names = nullptr;
  ASSERT_EQ(MXSymbolListArguments(fc, &n, &names), 0);
  ASSERT_EQ(n, 3u);
  EXPECT_STREQ(names[1], "fc1_weight");
  const char* arg_keys[] = {"data"};
  const uint32_t ind[] = {0, 2};
  const int dims[] = {5, 7};
  uint32_t in_size, out_size, aux_size;
  const int *in_ndim, *out_ndim, *aux_ndim;
  const int **in_data, **out_data, **aux_data;
  int complete = 0;
  ASSERT_EQ(MXSymbolInferShape(fc, 1, arg_keys, ind, dims, &in_size, &in_ndim, &in_data, &out_size,
                               &out_ndim, &out_data, &aux_size, &aux_ndim, &aux_data, &complete),
            0);
  EXPECT_EQ(complete, 1);
  ASSERT_EQ(in_size, 3u);
  EXPECT_EQ(in_ndim[1], 2);
  EXPECT_EQ(in_data[1][0], 10);
  EXPECT_EQ(in_data[1][1], 7);
  EXPECT_EQ(out_data[0][1], 10);
  const char* bad_keys[] = {"nope"};
  EXPECT_EQ(MXSymbolInferShape(fc, 1, bad_keys, ind, dims, &in_size, &in_ndim, &in_data, &out_size,
                               &out_ndim, &out_data, &aux_size, &aux_ndim, &aux_data, &complete),
            -1);
  EXPECT_NE(std::string(MXGetLastError()).find("InferShapeKeyword argument name nope not found"),
            std::string::npos);
  const char* json = nullptr;
  ASSERT_EQ(MXSymbolSaveToJSON(fc, &json), 0);
  SymbolHandle loaded = nullptr;
  ASSERT_EQ(MXSymbolCreateFromJSON(json, &loaded), 0);
  const char* out_str = nullptr;
  ASSERT_EQ(MXSymbolPrint(loaded, &out_str), 0);
  EXPECT_NE(std::string(out_str).find("Op:FullyConnected, Name=fc1"), std::string::npos);
  const char* attr = nullptr;
  int ok = 0;
  ASSERT_EQ(MXSymbolGetAttr(loaded, "num_hidden", &attr, &ok), 0);
  EXPECT_EQ(ok, 1);
  EXPECT_STREQ(attr, "10");
  ASSERT_EQ(MXSymbolFree(loaded), 0);
  EXPECT_EQ(MXSymbolFree(loaded), -1);  // stale
  EXPECT_EQ(MXSymbolPrint(loaded, &out_str), -1);
  EXPECT_EQ(MXSymbolPrint(fc_op, &out_str), -1);  // another kind of handle
  EXPECT_EQ(MXSymbolPrint(reinterpret_cast<SymbolHandle>(0x1234), &out_str), -1);  // forged
  ASSERT_EQ(MXSymbolFree(fc), 0);
  ASSERT_EQ(MXSymbolFree(data), 0);
}

TEST(SymbolCApi, GroupsOutputsAttributesTypesAndFiles) {
  SymbolHandle a = nullptr, b = nullptr, w = nullptr, fc = nullptr;
  ASSERT_EQ(MXSymbolCreateVariable("a", &a), 0);
  ASSERT_EQ(MXSymbolCreateVariable("b", &b), 0);
  ASSERT_EQ(MXSymbolCreateVariable("w", &w), 0);
  OpHandle fc_op = nullptr;
  ASSERT_EQ(NNGetOpHandle("FullyConnected", &fc_op), 0);
  const char* keys[] = {"num_hidden", "no_bias"};
  const char* vals[] = {"4", "True"};
  ASSERT_EQ(MXSymbolCreateAtomicSymbol(fc_op, 2, keys, vals, &fc), 0);
  const char* in_keys[] = {"data", "weight"};
  SymbolHandle ins[] = {a, w};
  ASSERT_EQ(MXSymbolCompose(fc, "f", 2, in_keys, ins), 0);
  SymbolHandle group = nullptr, out1 = nullptr, children = nullptr;
  SymbolHandle both[] = {fc, b};
  ASSERT_EQ(MXSymbolCreateGroup(2, both, &group), 0);
  uint32_t n = 0;
  ASSERT_EQ(MXSymbolGetNumOutputs(group, &n), 0);
  EXPECT_EQ(n, 2u);
  ASSERT_EQ(MXSymbolGetOutput(group, 1, &out1), 0);
  const char* name = nullptr;
  int ok = 0;
  ASSERT_EQ(MXSymbolGetName(out1, &name, &ok), 0);
  EXPECT_EQ(ok, 1);
  EXPECT_STREQ(name, "b");
  ASSERT_EQ(MXSymbolGetName(group, &name, &ok), 0);
  EXPECT_EQ(ok, 0);
  SymbolHandle unused = nullptr;
  EXPECT_EQ(MXSymbolGetOutput(group, 2, &unused), -1);
  ASSERT_EQ(MXSymbolGetChildren(fc, &children), 0);
  const char** names = nullptr;
  ASSERT_EQ(MXSymbolListOutputs(children, &n, &names), 0);
  ASSERT_EQ(n, 2u);
  EXPECT_STREQ(names[1], "w");
  ASSERT_EQ(MXSymbolSetAttr(fc, "lr_mult", "3"), 0);
  ASSERT_EQ(MXSymbolListAttrShallow(fc, &n, &names), 0);
  EXPECT_EQ(n, 4u);  // __lr_mult__ and again as lr_mult, no_bias, num_hidden
  ASSERT_EQ(MXSymbolListAttr(fc, &n, &names), 0);
  EXPECT_STREQ(names[0], "f$__lr_mult__");
  EXPECT_EQ(MXSymbolSetAttr(fc, "num_hidden", "zero"), -1);  // re-parsed and refused
  const char* value = nullptr;
  ASSERT_EQ(MXSymbolGetAttr(fc, "num_hidden", &value, &ok), 0);
  EXPECT_STREQ(value, "4");
  const int types[] = {1};
  const char* type_keys[] = {"a"};
  uint32_t in_n, out_n, aux_n;
  const int *in_t, *out_t, *aux_t;
  int complete = 0;
  ASSERT_EQ(MXSymbolInferType(group, 1, type_keys, types, &in_n, &in_t, &out_n, &out_t, &aux_n,
                              &aux_t, &complete),
            0)
      << MXGetLastError();
  EXPECT_EQ(complete, 0);  // b is not connected to a
  EXPECT_EQ(in_t[0], 1);
  EXPECT_EQ(in_t[1], 1);
  EXPECT_EQ(in_t[2], -1);
  EXPECT_EQ(out_t[0], 1);
  const std::string path = ::testing::TempDir() + "nanomx_symbol_test.json";
  ASSERT_EQ(MXSymbolSaveToFile(group, path.c_str()), 0);
  SymbolHandle loaded = nullptr;
  ASSERT_EQ(MXSymbolCreateFromFile(path.c_str(), &loaded), 0);
  ASSERT_EQ(MXSymbolListArguments(loaded, &n, &names), 0);
  EXPECT_EQ(n, 3u);
  EXPECT_EQ(MXSymbolFree(loaded), 0);
  EXPECT_EQ(MXSymbolCreateFromFile("/nonexistent/x.json", &unused), -1);
  EXPECT_EQ(MXSymbolCreateFromJSON("{", &unused), -1);
  EXPECT_EQ(MXSymbolCreateVariable(nullptr, &unused), -1);
  EXPECT_EQ(MXSymbolCompose(a, "x", 1, nullptr, ins), -1);  // a variable
  for (SymbolHandle h : {a, b, w, fc, group, out1, children}) EXPECT_EQ(MXSymbolFree(h), 0);
}

// ---- Layer operators, imperatively ----
NDArray array(Shape s, const std::vector<float>& v) {
  NDArray a(std::move(s), Context::cpu(0));
  a.sync_copy_from_cpu(v.data(), v.size() * sizeof(float));
  return a;
}

TEST(NNOps, FullyConnectedAgainstHandValues) {
  NDArray x = array(Shape{2, 3}, {1, 2, 3, 4, 5, 6});
  NDArray w = array(Shape{2, 3}, {1, 0, -1, 0.5, 0.5, 0.5});
  NDArray b = array(Shape{2}, {10, 20});
  std::vector<NDArray> in{x, w, b};
  NDArray y = ops::invoke_one(ops::get_op("FullyConnected"), in, {{"num_hidden", "2"}});
  EXPECT_EQ(y.shape(), (Shape{2, 2}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{8, 23, 8, 27.5}));
  std::vector<NDArray> nb{x, w};
  NDArray z = ops::invoke_one(ops::get_op("FullyConnected"), nb,
                              {{"num_hidden", "2"}, {"no_bias", "True"}});
  EXPECT_EQ(z.to_vector<float>(), (std::vector<float>{-2, 3, -2, 7.5}));
  // flatten=False keeps the leading axes.
  NDArray x3 = array(Shape{1, 2, 3}, {1, 2, 3, 4, 5, 6});
  std::vector<NDArray> in3{x3, w, b};
  NDArray y3 = ops::invoke_one(ops::get_op("FullyConnected"), in3,
                               {{"num_hidden", "2"}, {"flatten", "False"}});
  EXPECT_EQ(y3.shape(), (Shape{1, 2, 2}));
  std::vector<NDArray> bad{x, array(Shape{2, 4}, std::vector<float>(8, 0)), b};
  EXPECT_THROW(ops::invoke_one(ops::get_op("FullyConnected"), bad, {{"num_hidden", "2"}}), Error);
}

TEST(NNOps, ActivationSoftmaxOutputFlattenRegression) {
  NDArray x = array(Shape{2, 2}, {-1, 0, 1, 2});
  std::vector<NDArray> in{x};
  auto act = [&](const char* t) {
    return ops::invoke_one(ops::get_op("Activation"), in, {{"act_type", t}}).to_vector<float>();
  };
  EXPECT_EQ(act("relu"), (std::vector<float>{0, 0, 1, 2}));
  EXPECT_NEAR(act("sigmoid")[2], 1 / (1 + std::exp(-1.0)), 1e-6);
  EXPECT_NEAR(act("tanh")[3], std::tanh(2.0), 1e-6);
  EXPECT_NEAR(act("softrelu")[0], std::log1p(std::exp(-1.0)), 1e-6);
  EXPECT_NEAR(act("softsign")[3], 2.0 / 3.0, 1e-6);
  EXPECT_THROW(act("gelu"), Error);
  NDArray label = array(Shape{2}, {0, 1});
  std::vector<NDArray> sin{x, label};
  auto p = ops::invoke_one(ops::get_op("SoftmaxOutput"), sin, {}).to_vector<float>();
  EXPECT_NEAR(p[0], 1 / (1 + std::exp(1.0)), 1e-6);
  EXPECT_NEAR(p[2] + p[3], 1.0, 1e-6);
  auto alias = ops::invoke_one(ops::get_op("Softmax"), sin, {}).to_vector<float>();
  EXPECT_EQ(alias, p);
  NDArray x3 = array(Shape{2, 1, 2}, {1, 2, 3, 4});
  std::vector<NDArray> fin{x3};
  NDArray f = ops::invoke_one(ops::get_op("Flatten"), fin, {});
  EXPECT_EQ(f.shape(), (Shape{2, 2}));
  std::vector<NDArray> rin{x, x};
  EXPECT_EQ(ops::invoke_one(ops::get_op("LinearRegressionOutput"), rin, {}).to_vector<float>(),
            x.to_vector<float>());
}

}  // namespace
}  // namespace nanomx::symbol
