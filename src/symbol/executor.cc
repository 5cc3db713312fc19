// The symbolic executor (executor.h).
#include "symbol/executor.h"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "nanomx/error.h"
#include "nanomx/profiler.h"
#include "nanomx/storage.h"
#include "ops/kernel.h"
#include "ops/registry.h"
#include "symbol/fuse.h"
#include "symbol/gradient_graph.h"

namespace nanomx::symbol {

// One engine operation, prepared at bind: forward and backward push these as they are.
struct Executor::Step {
  const ops::Kernel* kernel = nullptr;
  const ops::AsyncRunFn* run_async = nullptr;  // set instead of kernel: a custom operator
  ops::ParsedParams params;
  // For an operator that reads the train mode (Dropout, BatchNorm): `params` with is_train set,
  // used by forward(is_train=true) and every backward step.
  std::optional<ops::ParsedParams> train_params;
  std::vector<NDArray> in, out;
  std::vector<engine::VarHandle> vars;  // reads, then writes
  size_t num_reads = 0;
  std::vector<const Shape*> shapes;  // inputs', then outputs'
  // The engine name when it is the node's own: a fused node's names the nodes it holds.
  std::string label;
  engine::PushOptions options;

  const ops::ParsedParams& params_for(bool is_train) const {
    return is_train && train_params ? *train_params : params;
  }
  void run(bool is_train) const { (*kernel)(params_for(is_train), in, out); }
};

namespace {

bool env_on(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' && std::string_view(v) != "0";
}

const ops::Op& copy_op() {
  const ops::Op* op = ops::find_op("_copy");
  return op ? *op : ops::get_op("_copyto");
}

// A zero-filled array the executor owns, named for the GPU memory profile as MXNet names it
// (`tensordot:in_arg:A`): allocated here under that label, then filled by _zeros.
NDArray zeros(const Shape& shape, Context ctx, DType dtype, const std::string& attribute_scope,
              const std::string& attribute_name) {
  NDArray a;
  {
    const storage::AllocationLabelScope label({attribute_scope, attribute_name});
    a = NDArray(shape, ctx, dtype);
  }
  const NDArray out[] = {a};
  ops::invoke(ops::get_op("_zeros"), {},
              {{"shape", shape.str()}, {"dtype", dtype_name(dtype)}, {"ctx", ctx.str()}}, out);
  return a;
}

// The profiler scope of each variable of the symbol, by name (docs/cuda.md).
std::unordered_map<std::string, std::string> variable_scopes(const Symbol& symbol) {
  std::unordered_map<std::string, std::string> scopes;
  for (Node* n : symbol.topo_order()) {
    if (n->is_variable()) scopes.try_emplace(n->name, profiler_scope_of(*n));
  }
  return scopes;
}

}  // namespace

GradReq parse_grad_req(const std::string& text) {
  if (text == "null") return GradReq::kNull;
  if (text == "write" || text == "inplace") return GradReq::kWrite;
  if (text == "add") return GradReq::kAdd;
  NANOMX_THROW() << "grad_req must be in {'null', 'write', 'add'}, got '" << text << "'";
  return GradReq::kNull;
}

ExecutorOptions ExecutorOptions::from_env() {
  ExecutorOptions o;
  o.plan = plan_options_from_env();
  o.mirror = env_on("MXNET_BACKWARD_DO_MIRROR");
  o.fuse = fusion_enabled_by_env();
  return o;
}

Executor::Executor(const Symbol& symbol, Context ctx, std::vector<NDArray> args,
                   std::vector<NDArray> grads, std::vector<GradReq> reqs, std::vector<NDArray> aux,
                   const ExecutorOptions& options)
    : symbol_(symbol),
      ctx_(ctx),
      args_(std::move(args)),
      grads_(std::move(grads)),
      aux_(std::move(aux)),
      reqs_(std::move(reqs)),
      options_(options) {
  try {
    build(options);
  } catch (...) {
    // Nothing was pushed yet: the block variables are all there is to release.
    for (engine::VarHandle v : block_vars_) engine::Engine::get().delete_variable({}, ctx_, v);
    throw;
  }
}

Executor::~Executor() {
  // Pending operations read this executor's steps: wait for every one of them.
  std::unordered_set<engine::VarHandle> written;
  for (const auto& s : steps_) {
    for (size_t i = s->num_reads; i < s->vars.size(); ++i) written.insert(s->vars[i]);
  }
  engine::Engine& engine = engine::Engine::get();
  for (engine::VarHandle v : written) {
    try {
      engine.wait_for_var(v);
    } catch (...) {
      // An operator's error: already raised (or to be raised) through the arrays.
    }
  }
  for (engine::VarHandle v : block_vars_) engine.delete_variable({}, ctx_, v);
}

void Executor::build(const ExecutorOptions& options) {
  const std::vector<std::string> arg_names = symbol_.list_arguments();
  NANOMX_CHECK(args_.size() == arg_names.size())
      << "bind: " << args_.size() << " argument arrays given, the symbol has " << arg_names.size()
      << " arguments";
  if (grads_.empty()) grads_.resize(args_.size());
  NANOMX_CHECK(grads_.size() == args_.size())
      << "bind: " << grads_.size() << " gradient arrays given for " << args_.size() << " arguments";
  if (reqs_.empty()) reqs_.assign(args_.size(), GradReq::kWrite);
  NANOMX_CHECK(reqs_.size() == args_.size())
      << "bind: " << reqs_.size() << " grad_req values given for " << args_.size() << " arguments";
  NANOMX_CHECK(aux_.size() == symbol_.list_auxiliary_states().size())
      << "bind: " << aux_.size() << " aux state arrays given, the symbol has "
      << symbol_.list_auxiliary_states().size();
  for (size_t i = 0; i < args_.size(); ++i) {
    NANOMX_CHECK(!args_[i].is_none())
        << "bind: argument '" << arg_names[i] << "' is a none array (no shape)";
    // An argument without a gradient array gets no gradient, whatever its req (MXNet's rule).
    if (grads_[i].is_none()) reqs_[i] = GradReq::kNull;
    if (reqs_[i] == GradReq::kNull) grads_[i] = NDArray();
    if (!grads_[i].is_none()) {
      NANOMX_CHECK(grads_[i].shape() == args_[i].shape() && grads_[i].dtype() == args_[i].dtype())
          << "bind: gradient array of '" << arg_names[i] << "' has shape " << grads_[i].shape()
          << " and dtype " << dtype_name(grads_[i].dtype()) << ", the argument " << args_[i].shape()
          << " and " << dtype_name(args_[i].dtype());
    }
  }

  // The forward graph's variables, in list_arguments() order.
  std::vector<std::shared_ptr<Node>> vars, aux_vars;
  {
    std::unordered_map<const Node*, std::shared_ptr<Node>> owner;
    for (const NodeEntry& e : symbol_.outputs) owner[e.node.get()] = e.node;
    for (Node* n : symbol_.topo_order()) {
      for (const NodeEntry& e : n->inputs) owner[e.node.get()] = e.node;
    }
    const std::unordered_set<const Node*> aux = symbol_.aux_variables();
    for (Node* n : symbol_.topo_order()) {
      if (n->is_variable()) (aux.contains(n) ? aux_vars : vars).push_back(owner.at(n));
    }
  }
  std::unordered_map<const Node*, NDArray> var_arrays;
  for (size_t i = 0; i < vars.size(); ++i) var_arrays[vars[i].get()] = args_[i];
  for (size_t i = 0; i < aux_vars.size(); ++i) {
    NANOMX_CHECK(!aux_[i].is_none())
        << "bind: aux state '" << aux_vars[i]->name << "' is a none array (no shape)";
    var_arrays[aux_vars[i].get()] = aux_[i];
  }

  // Inference-only on the CPU: the fused graph (its variables are symbol_'s own nodes).
  bool wants_gradient = false;
  for (const GradReq r : reqs_) wants_gradient = wants_gradient || r != GradReq::kNull;
  std::optional<Symbol> folded;
  if (options.fuse && !wants_gradient && ctx_.is_cpu()) folded = fuse_for_inference(symbol_);
  fused_ = folded.has_value();
  const Symbol& graph = fused_ ? *folded : symbol_;

  // The gradient graph, when anything wants a gradient.
  full_.outputs = graph.outputs;
  const size_t num_outputs = symbol_.outputs.size();
  std::vector<size_t> grad_arg;  // per gradient output: its argument
  std::vector<std::shared_ptr<Node>> head_vars;
  {
    std::vector<NodeEntry> xs;
    for (size_t i = 0; i < vars.size(); ++i) {
      if (reqs_[i] != GradReq::kNull) {
        xs.push_back({vars[i], 0, 0});
        grad_arg.push_back(i);
      }
    }
    if (!xs.empty()) {
      MirrorFn mirror = [m = options.mirror](const Node& n) { return default_mirror(n, m); };
      GradientGraph gg = build_gradient_graph(symbol_, xs, mirror);
      head_vars = gg.head_grads;
      for (size_t k = 0; k < gg.grads.size(); ++k) {
        NodeEntry g = gg.grads[k];
        bool taken = g.node->is_variable();
        for (const NodeEntry& o : full_.outputs) {
          taken = taken || (o.node == g.node && o.index == g.index);
        }
        if (taken) {
          // Each output entry has its own array: the same gradient twice gets a copy.
          auto c = std::make_shared<Node>();
          c->op = &copy_op();
          c->name = g.node->name + "_" + std::to_string(k) + "_copy";
          c->inputs = {g};
          c->reparse();
          g = {c, 0, 0};
        }
        full_.outputs.push_back(g);
      }
    }
  }

  const IndexedGraph g = index_graph(full_);
  const size_t num_entries = g.row_ptr.back();
  // The forward nodes come first: the DFS visits the forward outputs before any gradient.
  size_t num_forward_nodes = 0;
  {
    Symbol fwd_only;
    fwd_only.outputs = graph.outputs;
    num_forward_nodes = fwd_only.topo_order().size();
  }

  // Shapes and dtypes of every entry, in topological order.
  std::vector<Shape> shapes(num_entries);
  std::vector<DType> types(num_entries, DType::kFloat32);
  std::vector<bool> external(num_entries, false);
  std::vector<NDArray> bound(num_entries);
  head_grads_.assign(num_outputs, NDArray());
  head_needed_.assign(num_outputs, false);
  std::unordered_map<const Node*, size_t> head_index;
  for (size_t i = 0; i < head_vars.size(); ++i) head_index[head_vars[i].get()] = i;
  for (size_t nid = 0; nid < g.nodes.size(); ++nid) {
    Node* n = g.nodes[nid];
    const size_t first = g.row_ptr[nid];
    if (n->is_variable()) {
      NDArray a;
      if (auto it = var_arrays.find(n); it != var_arrays.end()) {
        a = it->second;
      } else if (auto h = head_index.find(n); h != head_index.end()) {
        const size_t o = g.entry(symbol_.outputs[h->second]);
        const Node& head = *symbol_.outputs[h->second].node;
        const std::string scope = profiler_scope_of(head), name = "head_grad:" + head.name;
        const storage::AllocationLabelScope label({scope, name});
        a = NDArray(shapes[o], ctx_, types[o]);
        head_grads_[h->second] = a;
        head_needed_[h->second] = true;
      } else {
        NANOMX_THROW() << "bind: variable " << n->name << " is not an argument of the symbol";
      }
      shapes[first] = a.shape();
      types[first] = a.dtype();
      external[first] = true;
      bound[first] = a;
      continue;
    }
    const size_t n_out = n->num_outputs();
    std::vector<ops::PartialShape> in_s, out_s(n_out);
    std::vector<ops::PartialDType> in_t, out_t(n_out);
    for (const NodeEntry& e : n->inputs) {
      in_s.emplace_back(shapes[g.entry(e)]);
      in_t.emplace_back(types[g.entry(e)]);
    }
    try {
      ops::infer_shapes(*n->op, n->parsed, in_s, out_s);
      ops::infer_types(*n->op, n->parsed, in_t, out_t);
    } catch (const Error& e) {
      NANOMX_THROW() << "bind: error in operator " << n->name << ": " << e.what();
    }
    for (size_t j = 0; j < n_out; ++j) {
      NANOMX_CHECK(out_s[j].known() && out_t[j])
          << "bind: cannot infer the shape of output " << j << " of " << n->name << " ("
          << n->op->name << ", inputs " << ops::shape_list(in_s) << ")";
      shapes[first + j] = out_s[j].shape();
      types[first + j] = *out_t[j];
    }
  }

  // Gradient outputs with req write go straight into the user's arrays.
  std::vector<int> add_into(num_entries, -1);  // entry -> argument whose gradient it adds to
  for (size_t k = 0; k < grad_arg.size(); ++k) {
    const size_t e = g.entry(full_.outputs[num_outputs + k]);
    const size_t a = grad_arg[k];
    NANOMX_CHECK(shapes[e] == args_[a].shape())
        << "bind: gradient of " << arg_names[a] << " has shape " << shapes[e] << ", the argument "
        << args_[a].shape();
    if (reqs_[a] == GradReq::kWrite) {
      external[e] = true;
      bound[e] = grads_[a];
    } else {
      add_into[e] = static_cast<int>(a);
    }
  }

  // The memory plan: op nodes in order, then one add per gradient with req add.
  std::vector<PlanEntry> pe(num_entries);
  for (size_t e = 0; e < num_entries; ++e) {
    pe[e].elements = static_cast<size_t>(shapes[e].size());
    pe[e].dtype_size = dtype_size(types[e]);
    pe[e].external = external[e];
  }
  for (size_t i = 0; i < num_outputs; ++i) pe[g.entry(full_.outputs[i])].output = true;
  std::vector<PlanNode> pn;
  std::vector<size_t> pn_node;  // plan node -> graph node
  for (size_t nid = 0; nid < g.nodes.size(); ++nid) {
    Node* n = g.nodes[nid];
    if (n->is_variable()) continue;
    PlanNode p;
    for (const NodeEntry& e : n->inputs) p.inputs.push_back(static_cast<uint32_t>(g.entry(e)));
    for (uint32_t j = 0; j < n->num_outputs(); ++j)
      p.outputs.push_back(static_cast<uint32_t>(g.row_ptr[nid] + j));
    p.inplace = n->op->inplace;
    pn.push_back(std::move(p));
    pn_node.push_back(nid);
  }
  for (size_t e = 0; e < num_entries; ++e) {
    if (add_into[e] >= 0) pn.push_back({{static_cast<uint32_t>(e)}, {}, {}});
  }
  plan_ = plan_memory(pn, pe, options.plan);

  // One arena for every block; entries are views into it.
  storage::ArenaLayout layout;
  std::vector<size_t> offsets;
  for (size_t b : plan_.block_bytes) offsets.push_back(layout.add(b));
  std::shared_ptr<storage::Arena> arena = storage::Arena::create(layout.planned_bytes(), ctx_);
  engine::Engine& engine = engine::Engine::get();
  for (size_t i = 0; i < plan_.block_bytes.size(); ++i)
    block_vars_.push_back(engine.new_variable());
  entries_.assign(num_entries, NDArray());
  for (size_t e = 0; e < num_entries; ++e) {
    const int sid = plan_.storage[e];
    if (sid >= 0) {
      entries_[e] =
          NDArray::in_arena(arena, offsets[static_cast<size_t>(sid)], shapes[e], types[e]);
    } else {
      entries_[e] = bound[e];
    }
  }
  for (size_t i = 0; i < num_outputs; ++i) outputs_.push_back(entries_[g.entry(full_.outputs[i])]);
  // The GPU memory profile shows the arena as its blocks, each named after the first node whose
  // output it holds (MXNet names a shared storage after its first user): `tensordot:dot`.
  {
    std::vector<storage::ArenaRegion> regions(plan_.block_bytes.size());
    std::vector<bool> named(plan_.block_bytes.size(), false);
    for (size_t nid = 0; nid < g.nodes.size(); ++nid) {
      for (size_t e = g.row_ptr[nid]; e < g.row_ptr[nid + 1]; ++e) {
        const int sid = plan_.storage[e];
        if (sid < 0 || named[static_cast<size_t>(sid)]) continue;
        named[static_cast<size_t>(sid)] = true;
        storage::ArenaRegion& r = regions[static_cast<size_t>(sid)];
        r.attribute = profiler_scope_of(*g.nodes[nid]) + g.nodes[nid]->name;
        r.offset = offsets[static_cast<size_t>(sid)];
        r.bytes = plan_.block_bytes[static_cast<size_t>(sid)];
      }
    }
    std::erase_if(regions, [](const storage::ArenaRegion& r) { return r.bytes == 0; });
    arena->describe(regions);
  }

  // The steps.
  std::vector<bool> is_output(num_entries, false);
  for (size_t i = 0; i < num_outputs; ++i) is_output[g.entry(full_.outputs[i])] = true;
  // What a read or write of an entry waits on: a planned entry's block (entries sharing it are
  // ordered through it), a bound array's own variable; a graph output both.
  auto deps = [&](size_t e, bool write, std::vector<engine::VarHandle>& out) {
    const int sid = plan_.storage[e];
    if (sid >= 0) {
      out.push_back(block_vars_[static_cast<size_t>(sid)]);
      if (write && is_output[e]) out.push_back(entries_[e].var());
    } else {
      out.push_back(entries_[e].var());
    }
  };
  auto finish = [&](Step& s) {
    for (const NDArray& a : s.in) s.shapes.push_back(&a.shape());
    for (const NDArray& a : s.out) s.shapes.push_back(&a.shape());
    s.options.profile_mode = profiler::kSymbolic;
    // The cost estimate that lets a small node run on the pushing thread (engine.h).
    for (const NDArray& a : s.in) s.options.bytes_touched += a.nbytes();
    for (const NDArray& a : s.out) s.options.bytes_touched += a.nbytes();
    s.options.input_shapes = std::span<const Shape* const>(s.shapes).first(s.in.size());
    s.options.output_shapes = std::span<const Shape* const>(s.shapes).subspan(s.in.size());
  };
  // How many nodes (and graph outputs) read each entry: an output nothing reads need not be
  // computed (ParsedParams::output_wanted).
  std::vector<uint32_t> readers(num_entries, 0);
  for (Node* n : g.nodes) {
    for (const NodeEntry& e : n->inputs) ++readers[g.entry(e)];
  }
  for (const NodeEntry& e : full_.outputs) ++readers[g.entry(e)];
  num_forward_steps_ = 0;
  for (size_t k = 0; k < pn_node.size(); ++k) {
    const size_t nid = pn_node[k];
    Node* n = g.nodes[nid];
    auto s = std::make_unique<Step>();
    if (n->op->run_async) {
      s->run_async = &n->op->run_async;
    } else {
      s->kernel = &ops::get_kernel(*n->op, ctx_.dev_type);
    }
    s->params = n->parsed;
    for (uint32_t j = 0; j < n->num_outputs(); ++j) {
      if (readers[g.row_ptr[nid] + j] == 0 && add_into[g.row_ptr[nid] + j] < 0) {
        s->params.set_output_unused(j);
      }
    }
    if (n->op->reads_train_mode) {
      s->train_params = s->params;
      s->train_params->set_train(true);
    }
    std::vector<engine::VarHandle> reads, writes;
    for (size_t i = 0; i < n->inputs.size(); ++i) {
      const size_t id = g.entry(n->inputs[i]);
      s->in.push_back(entries_[id]);
      // An input the operator writes (an aux state) is pushed as written, so later readers wait
      // for the update.
      const bool mutated = n->op->mutates(static_cast<int>(i));
      deps(id, mutated, mutated ? writes : reads);
    }
    for (uint32_t j = 0; j < n->num_outputs(); ++j) {
      const size_t id = g.row_ptr[nid] + j;
      s->out.push_back(entries_[id]);
      deps(id, true, writes);
    }
    s->vars = reads;
    s->num_reads = reads.size();
    s->vars.insert(s->vars.end(), writes.begin(), writes.end());
    s->options.name = n->op->engine_name.c_str();
    s->options.name_id = n->op->engine_name_id;
    if (auto held = n->attrs.find("fused_nodes"); held != n->attrs.end()) {
      // One event for the fused node, named after what it holds: _sg_mkldnn_conv[conv,bn,relu].
      s->label = n->op->engine_name + "[" + held->second + "]";
      s->options.name = s->label.c_str();
      s->options.name_id = profiler::intern(s->label);
    }
    finish(*s);
    steps_.push_back(std::move(s));
    if (nid < num_forward_nodes) num_forward_steps_ = steps_.size();
  }
  // grad_req add: the kernels write a planned temporary, then an add accumulates it.
  const ops::Op& add = ops::get_op("ElementWiseSum");
  for (size_t e = 0; e < num_entries; ++e) {
    if (add_into[e] < 0) continue;
    const NDArray& dest = grads_[static_cast<size_t>(add_into[e])];
    auto s = std::make_unique<Step>();
    s->kernel = &ops::get_kernel(add, ctx_.dev_type);
    s->params = ops::parse_attrs(add, {{"num_args", "2"}}, 2);
    s->in = {dest, entries_[e]};
    s->out = {dest};
    deps(e, false, s->vars);
    s->vars.push_back(dest.var());  // read and written: a write
    s->num_reads = 1;
    s->options.name = add.engine_name.c_str();
    s->options.name_id = add.engine_name_id;
    finish(*s);
    steps_.push_back(std::move(s));
  }
}

void Executor::push_steps(size_t begin, size_t end, bool is_train) {
  engine::Engine& engine = engine::Engine::get();
  for (size_t i = begin; i < end; ++i) {
    const Step* s = steps_[i].get();
    const std::span<const engine::VarHandle> vars(s->vars);
    if (s->run_async != nullptr) {
      // A custom operator: asynchronous, never profiled itself (its body is).
      engine::PushOptions options;
      options.prop = engine::FnProperty::kAsync;
      engine.push_async(
          [s, is_train](engine::Completion done) {
            (*s->run_async)(s->params_for(is_train), s->in, s->out, std::move(done));
          },
          ctx_, vars.first(s->num_reads), vars.subspan(s->num_reads), options);
      continue;
    }
    engine.push([s, is_train] { s->run(is_train); }, ctx_, vars.first(s->num_reads),
                vars.subspan(s->num_reads), s->options);
  }
}

void Executor::forward(bool is_train) {
  if (is_train && fused_) {
    // The fused graph holds BatchNorm's inference form: training runs the original graph.
    if (!unfused_) {
      ExecutorOptions unfused = options_;
      unfused.fuse = false;
      unfused_ = std::make_unique<Executor>(
          symbol_, ctx_, args_, std::vector<NDArray>(args_.size()), reqs_, aux_, unfused);
    }
    unfused_->forward(true);
    for (size_t i = 0; i < outputs_.size(); ++i) outputs_[i].copy_from(unfused_->outputs()[i]);
    return;
  }
  push_steps(0, num_forward_steps_, is_train);
}

void Executor::backward(std::span<const NDArray> head_grads, bool is_train) {
  if (steps_.size() == num_forward_steps_) return;  // nothing wants a gradient
  for (size_t i = 0; i < head_grads_.size(); ++i) {
    if (!head_needed_[i]) continue;
    NANOMX_CHECK(i < head_grads.size() && !head_grads[i].is_none())
        << "Because the last operator is not Loss function, head_gradient is required when "
           "calling backward. If you are attempting to minimize the output as an objective, "
           "please modify your network and pass it through the make_loss symbol.";
    const NDArray& from = head_grads[i];
    NANOMX_CHECK(from.shape() == head_grads_[i].shape())
        << "backward: head gradient " << i << " has shape " << from.shape() << ", output " << i
        << " has " << head_grads_[i].shape();
    if (from.dtype() == head_grads_[i].dtype()) {
      head_grads_[i].copy_from(from);
    } else {  // MXNet's CopyFromTo converts
      const NDArray dest[] = {head_grads_[i]};
      ops::invoke(ops::get_op("_copyto"), {&from, 1}, {}, dest);
    }
  }
  push_steps(num_forward_steps_, steps_.size(), is_train);
}

std::string Executor::debug_str() const {
  std::ostringstream os;
  os << full_.debug_str();
  os << "Total " << (plan_.planned_bytes >> 20) << " MB allocated\n";
  os << "Total 11 TempSpace resource requested\n";
  return os.str();
}

std::unique_ptr<Executor> Executor::simple_bind(
    const Symbol& symbol, Context ctx, const std::map<std::string, ops::PartialShape>& shapes,
    const std::map<std::string, DType>& types, std::vector<GradReq> reqs,
    const ExecutorOptions& options) {
  const std::vector<std::string> names = symbol.list_arguments();
  // Python's simple_bind adds MXNet's "simple_bind error. Arguments:" listing.
  auto fail = [&](const std::string& why) { NANOMX_THROW() << why; };
  ShapeResult sr;
  try {
    sr = infer_shape(symbol, shapes);
  } catch (const Error& e) {
    fail(e.what());
  }
  std::string unknown;
  for (size_t i = 0; i < names.size(); ++i) {
    if (!sr.args[i].known()) unknown += (unknown.empty() ? "" : ", ") + names[i];
  }
  const std::vector<std::string> aux_names = symbol.list_auxiliary_states();
  for (size_t i = 0; i < aux_names.size(); ++i) {
    if (!sr.aux[i].known()) unknown += (unknown.empty() ? "" : ", ") + aux_names[i];
  }
  if (!unknown.empty()) fail("cannot infer the shapes of arguments: " + unknown);
  std::map<std::string, DType> known_types = types;
  if (types.empty()) {
    // MXNet: without type_dict every argument without a __dtype__ attribute is float32.
    std::unordered_set<std::string> typed;
    for (Node* n : symbol.topo_order()) {
      if (n->is_variable() && n->attrs.count("__dtype__")) typed.insert(n->name);
    }
    for (const std::string& name : names) {
      if (!typed.count(name)) known_types[name] = DType::kFloat32;
    }
    for (const std::string& name : aux_names) {
      if (!typed.count(name)) known_types[name] = DType::kFloat32;
    }
  }
  TypeResult tr;
  try {
    tr = infer_type(symbol, known_types);
  } catch (const Error& e) {
    fail(e.what());
  }
  if (reqs.empty()) reqs.assign(names.size(), GradReq::kWrite);
  NANOMX_CHECK(reqs.size() == names.size())
      << "simple_bind: " << reqs.size() << " grad_req values given for " << names.size()
      << " arguments";
  std::vector<NDArray> args, grads, aux;
  const auto scopes = variable_scopes(symbol);
  for (size_t i = 0; i < names.size(); ++i) {
    const DType t = tr.args[i] ? *tr.args[i] : DType::kFloat32;
    const std::string& scope = scopes.at(names[i]);
    args.push_back(zeros(sr.args[i].shape(), ctx, t, scope, "in_arg:" + names[i]));
    grads.push_back(reqs[i] == GradReq::kNull
                        ? NDArray()
                        : zeros(sr.args[i].shape(), ctx, t, scope, "arg_grad:" + names[i]));
  }
  for (size_t i = 0; i < sr.aux.size(); ++i) {
    const DType t = i < tr.aux.size() && tr.aux[i] ? *tr.aux[i] : DType::kFloat32;
    aux.push_back(
        zeros(sr.aux[i].shape(), ctx, t, scopes.at(aux_names[i]), "aux_state:" + aux_names[i]));
  }
  return std::make_unique<Executor>(symbol, ctx, std::move(args), std::move(grads), std::move(reqs),
                                    std::move(aux), options);
}

std::unique_ptr<Executor> Executor::reshape(const std::map<std::string, Shape>& new_shapes,
                                            bool partial_shaping, bool allow_up_sizing) const {
  const std::vector<std::string> names = symbol_.list_arguments();
  std::map<std::string, ops::PartialShape> known;
  for (const auto& [k, v] : new_shapes) known[k] = v;
  const ShapeResult sr = infer_shape(symbol_, known);
  NANOMX_CHECK(sr.complete || [&] {
    for (const auto& s : sr.args)
      if (!s.known()) return false;
    return true;
  }()) << "reshape: cannot infer the shapes of every argument from the given shapes";
  // An array of the new shape in the old one's storage where it fits.
  const auto scopes = variable_scopes(symbol_);
  auto reuse = [&](const NDArray& old, const Shape& shape, const std::string& name,
                   const char* role, bool given) -> NDArray {
    if (old.is_none()) return old;
    if (old.shape() == shape) return old;
    if (shape.size() > old.size()) {
      NANOMX_CHECK(allow_up_sizing)
          << "New shape of arg: " << name << " is larger than original. First making a big "
          << "executor and then down sizing it is more efficient than the reverse. If you "
             "really want to up size, set allow_up_sizing=True to enable allocation of new "
             "arrays.";
      auto scope = scopes.find(name);
      return zeros(shape, old.ctx(), old.dtype(),
                   scope == scopes.end() ? std::string("<unk>:") : scope->second, role + name);
    }
    NANOMX_CHECK(given || partial_shaping)
        << "Shape of unspecifie arg: " << name << " changed. This can cause the new executor "
        << "to not share parameters with the old one. Please check for error in network. If "
           "this is intended, set partial_shaping=True to suppress this warning.";
    return old.reshape(Shape{old.size()}).slice(0, shape.size()).reshape(shape);
  };
  std::vector<NDArray> args, grads, aux;
  for (size_t i = 0; i < names.size(); ++i) {
    const Shape& s = sr.args[i].shape();
    const bool given = new_shapes.count(names[i]) > 0;
    args.push_back(reuse(args_[i], s, names[i], "in_arg:", given));
    grads.push_back(reuse(grads_[i], s, names[i], "arg_grad:", given));
  }
  const std::vector<std::string> aux_names = symbol_.list_auxiliary_states();
  for (size_t i = 0; i < aux_.size(); ++i)
    aux.push_back(reuse(aux_[i], sr.aux[i].shape(), aux_names[i], "aux_state:", false));
  return std::make_unique<Executor>(symbol_, ctx_, std::move(args), std::move(grads), reqs_,
                                    std::move(aux), options_);
}

}  // namespace nanomx::symbol
