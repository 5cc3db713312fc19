// Custom and _backward_Custom (ops/custom.h): definitions that ask the user's property object,
// the body run on custom-operator worker threads, and Custom's gradient rule.
#include "ops/custom.h"

#include <condition_variable>
#include <cstdio>
#include <deque>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "nanomx/engine.h"
#include "nanomx/error.h"
#include "nanomx/profiler.h"
#include "ops/gradient.h"
#include "ops/registry.h"
#include "profiler/hooks.h"

namespace nanomx::ops::custom {
namespace {

struct Registered {
  std::mutex mutex;
  std::unordered_map<std::string, PropCreator> creators;
};
Registered& registered_ops() {
  static auto* r = new Registered;  // never destroyed: used until the process ends
  return *r;
}

// The parsed attributes of a Custom / _backward_Custom call: the user's property object and
// what it said about the operator's arguments.
struct CustomParams {
  std::string op_type;
  std::shared_ptr<Prop> prop;
  std::vector<std::string> arguments, outputs, aux;
  std::vector<bool> needs_out_grad;  // per output: backward reads its gradient
};

void parse_custom(const Params& p, ParsedParams& out) {
  NANOMX_CHECK(p.has("op_type")) << p.op() << ": Required argument `op_type` is missing.";
  CustomParams params;
  params.op_type = p.get_string("op_type");
  Attrs kwargs;
  for (const auto& [key, value] : p.all()) {
    if (key != "op_type" && key != "num_args") kwargs.emplace_back(key, value);
  }
  PropCreator creator;
  {
    Registered& r = registered_ops();
    std::lock_guard lock(r.mutex);
    auto it = r.creators.find(params.op_type);
    NANOMX_CHECK(it != r.creators.end()) << "Cannot find custom operator " << params.op_type;
    creator = it->second;
  }
  std::unique_ptr<Prop> prop = creator(params.op_type, kwargs);
  NANOMX_CHECK(prop != nullptr) << "custom operator " << params.op_type
                                << ": the property creator returned nothing";
  params.arguments = prop->list_arguments();
  params.outputs = prop->list_outputs();
  params.aux = prop->list_auxiliary_states();
  const int n_out = static_cast<int>(params.outputs.size());
  const int n_args = static_cast<int>(params.arguments.size());
  std::vector<int> out_grad_ids, in_ids, out_ids;
  for (int i = 0; i < n_out; ++i) out_grad_ids.push_back(i);
  for (int i = 0; i < n_args; ++i) in_ids.push_back(n_out + i);
  for (int i = 0; i < n_out; ++i) out_ids.push_back(n_out + n_args + i);
  const std::vector<int> deps = prop->declare_backward_dependency(out_grad_ids, in_ids, out_ids);
  params.needs_out_grad.assign(static_cast<size_t>(n_out), false);
  for (int d : deps) {
    if (d >= 0 && d < n_out) params.needs_out_grad[static_cast<size_t>(d)] = true;
  }
  params.prop = std::move(prop);
  out.emplace<CustomParams>(std::move(params));
}

// Shapes through the user's infer_shape, once every input shape is known (partial inference
// leaves the outputs unknown otherwise). `backward`: the _backward_Custom layout, whose outputs
// are the gradients of the arguments (their shapes).
void infer_custom_shape(const ParsedParams& pp, std::span<PartialShape> in,
                        std::span<PartialShape> out, bool backward) {
  const auto& p = pp.get<CustomParams>();
  const size_t n_args = p.arguments.size(), n_out = p.outputs.size(), n_aux = p.aux.size();
  if (backward) {
    NANOMX_CHECK(in.size() == 2 * n_out + n_args + n_aux)
        << "_backward_Custom (" << p.op_type << "): expected " << 2 * n_out + n_args + n_aux
        << " inputs (output gradients, inputs, outputs, auxiliary states), got " << in.size();
    for (size_t i = 0; i < n_args; ++i) {
      if (in[n_out + i].known()) out[i] = in[n_out + i];
    }
    return;
  }
  NANOMX_CHECK(in.size() == n_args + n_aux)
      << "Custom (" << p.op_type << "): expected " << n_args + n_aux << " inputs (" << n_args
      << " arguments, " << n_aux << " auxiliary states), got " << in.size();
  std::vector<Shape> shapes, out_shapes, aux_shapes;
  for (size_t i = 0; i < in.size(); ++i) {
    if (!in[i].known()) return;
    shapes.push_back(in[i].shape());
  }
  aux_shapes.assign(shapes.begin() + static_cast<std::ptrdiff_t>(n_args), shapes.end());
  shapes.resize(n_args);
  p.prop->infer_shape(shapes, out_shapes, aux_shapes);
  NANOMX_CHECK(shapes.size() == n_args && out_shapes.size() == n_out && aux_shapes.size() == n_aux)
      << "Custom (" << p.op_type << "): infer_shape returned " << shapes.size() << " input, "
      << out_shapes.size() << " output and " << aux_shapes.size() << " auxiliary shapes, expected "
      << n_args << ", " << n_out << " and " << n_aux;
  for (size_t i = 0; i < n_args; ++i) in[i] = PartialShape(shapes[i]);
  for (size_t i = 0; i < n_aux; ++i) in[n_args + i] = PartialShape(aux_shapes[i]);
  for (size_t i = 0; i < n_out; ++i) out[i] = PartialShape(out_shapes[i]);
}

void infer_custom_type(const ParsedParams& pp, std::span<PartialDType> in,
                       std::span<PartialDType> out, bool backward) {
  const auto& p = pp.get<CustomParams>();
  const size_t n_args = p.arguments.size(), n_out = p.outputs.size(), n_aux = p.aux.size();
  if (backward) {
    for (size_t i = 0; i < n_args && n_out + i < in.size(); ++i) {
      if (in[n_out + i]) out[i] = in[n_out + i];
    }
    return;
  }
  std::vector<int> types, out_types, aux_types;
  for (size_t i = 0; i < in.size(); ++i) {
    if (!in[i]) return;
    types.push_back(static_cast<int>(*in[i]));
  }
  aux_types.assign(types.begin() + static_cast<std::ptrdiff_t>(n_args), types.end());
  types.resize(n_args);
  p.prop->infer_type(types, out_types, aux_types);
  NANOMX_CHECK(types.size() == n_args && out_types.size() == n_out && aux_types.size() == n_aux)
      << "Custom (" << p.op_type << "): infer_type returned " << types.size() << " input, "
      << out_types.size() << " output and " << aux_types.size() << " auxiliary types, expected "
      << n_args << ", " << n_out << " and " << n_aux;
  auto as_dtype = [&](int code) {
    NANOMX_CHECK(dtype_valid(code))
        << "Custom (" << p.op_type << "): infer_type returned the unknown type code " << code;
    return PartialDType(static_cast<DType>(code));
  };
  for (size_t i = 0; i < n_args; ++i) in[i] = as_dtype(types[i]);
  for (size_t i = 0; i < n_aux; ++i) in[n_args + i] = as_dtype(aux_types[i]);
  for (size_t i = 0; i < n_out; ++i) out[i] = as_dtype(out_types[i]);
}

// Threads that run custom bodies. The pool starts empty and adds a thread whenever more jobs
// wait than threads are idle (MXNet's policy), so a body that waits for another custom
// operator's result never starves it. Never destroyed: idle threads wait until the process ends.
class WorkerPool {
 public:
  static WorkerPool& get() {
    static auto* pool = new WorkerPool;
    return *pool;
  }
  void submit(std::function<void()> job) {
    std::lock_guard lock(mutex_);
    jobs_.push_back(std::move(job));
    if (static_cast<size_t>(idle_) < jobs_.size()) {
      std::thread([this] { loop(); }).detach();
      ++idle_;  // counted as idle from now, so a burst does not start a thread per job twice
    }
    ready_.notify_one();
  }

 private:
  void loop() {
    profiler::set_thread_name("custom operator worker");
    std::unique_lock lock(mutex_);
    for (;;) {
      ready_.wait(lock, [this] { return !jobs_.empty(); });
      std::function<void()> job = std::move(jobs_.front());
      jobs_.pop_front();
      --idle_;
      lock.unlock();
      job();  // never throws: run_body catches everything
      job = nullptr;
      lock.lock();
      ++idle_;
    }
  }
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> jobs_;
  int idle_ = 0;
};

// One call of the body: aliases of the call's arrays and its completion.
struct Job {
  std::shared_ptr<Prop> prop;
  std::string op_type;
  bool backward = false;
  size_t n_args = 0, n_out = 0, n_aux = 0;
  std::vector<NDArray> in, out;  // aliases
  Context ctx;
  engine::Completion done;
};

void run_body(const std::shared_ptr<Job>& job) {
  std::exception_ptr error;
  try {
    const std::string name = (job->backward ? "_backward_" : "") + job->op_type;
    engine::CustomOpScope scope(name);
    std::unique_ptr<profiler::Task> task;
    if (profiler::active(profiler::kImperative)) {
      static const profiler::Domain domain("Custom Operator");
      task = std::make_unique<profiler::Task>(domain, name + "::pure_python");
      task->start();
    }
    const size_t n_args = job->n_args, n_out = job->n_out, n_aux = job->n_aux;
    // The arguments and auxiliary states, as create_operator sees them.
    const size_t data_at = job->backward ? n_out : 0;
    std::vector<Shape> shapes;
    std::vector<int> dtypes;
    std::vector<NDArray> in_data, aux;
    for (size_t i = 0; i < n_args; ++i) in_data.push_back(job->in[data_at + i]);
    const size_t aux_at = job->backward ? 2 * n_out + n_args : n_args;
    for (size_t i = 0; i < n_aux; ++i) aux.push_back(job->in[aux_at + i]);
    for (const auto* list : {&in_data, &aux}) {
      for (const NDArray& a : *list) {
        shapes.push_back(a.shape());
        dtypes.push_back(static_cast<int>(a.dtype()));
      }
    }
    std::unique_ptr<Operator> op = job->prop->create_operator(job->ctx, shapes, dtypes);
    NANOMX_CHECK(op != nullptr) << "custom operator " << job->op_type
                                << ": create_operator returned nothing";
    const std::vector<int> req(job->out.size(), kWriteTo);
    if (!job->backward) {
      op->forward(job->prop->is_train(), req, in_data, job->out, aux);
    } else {
      const std::span<const NDArray> in = job->in;
      op->backward(req, in.first(n_out), in_data, in.subspan(n_out + n_args, n_out), job->out, aux);
    }
    if (task) task->stop();
  } catch (...) {
    error = std::current_exception();
  }
  // MXNet's CustomOperatorWait: completes the call once everything the body pushed on the
  // aliases finished. Unnamed, so never profiled.
  std::vector<engine::VarHandle> reads, writes;
  for (const NDArray& a : job->in) reads.push_back(a.var());
  for (const NDArray& a : job->out) writes.push_back(a.var());
  engine::Completion done = std::move(job->done);
  try {
    engine::Engine::get().push(
        [job, done, error] {
          // The aliases (held by `job`) stay alive until here.
          done.done(error);
        },
        job->ctx, reads, writes);
  } catch (...) {
    done.done(std::current_exception());
  }
}

void run_custom(const ParsedParams& pp, std::span<const NDArray> in, std::span<const NDArray> out,
                engine::Completion done, bool backward) {
  const auto& p = pp.get<CustomParams>();
  auto job = std::make_shared<Job>();
  job->prop = p.prop;
  job->op_type = p.op_type;
  job->backward = backward;
  job->n_args = p.arguments.size();
  job->n_out = p.outputs.size();
  job->n_aux = p.aux.size();
  for (const NDArray& a : in) job->in.push_back(a.alias());
  for (const NDArray& a : out) job->out.push_back(a.alias());
  job->ctx = out.empty() ? Context::cpu(0) : out[0].ctx();
  job->done = std::move(done);
  // The naive engine runs everything on the calling thread, bodies included (as MXNet).
  if (engine::Engine::get().type() == engine::EngineType::kNaive) {
    run_body(job);
  } else {
    WorkerPool::get().submit([job] { run_body(job); });
  }
}

Op custom_op(bool backward) {
  const std::string name = backward ? "_backward_Custom" : "Custom";
  return Op{
      .name = name,
      .inputs = {"data"},
      .keys = {"op_type", "num_args"},
      .any_keys = true,
      .num_inputs_key = "num_args",
      .parse = parse_custom,
      .infer_shape = [backward](
                         const ParsedParams& p, std::span<PartialShape> in,
                         std::span<PartialShape> out) { infer_custom_shape(p, in, out, backward); },
      .infer_type = [backward](
                        const ParsedParams& p, std::span<PartialDType> in,
                        std::span<PartialDType> out) { infer_custom_type(p, in, out, backward); },
      .num_outputs =
          [backward](const ParsedParams& p) {
            const auto& c = p.get<CustomParams>();
            return static_cast<int>(backward ? c.arguments.size() : c.outputs.size());
          },
      .input_names =
          [backward](const ParsedParams& p) {
            const auto& c = p.get<CustomParams>();
            std::vector<std::string> names;
            if (backward) {
              for (const auto& o : c.outputs) names.push_back(o + "_grad");
            }
            names.insert(names.end(), c.arguments.begin(), c.arguments.end());
            if (backward) names.insert(names.end(), c.outputs.begin(), c.outputs.end());
            names.insert(names.end(), c.aux.begin(), c.aux.end());
            return names;
          },
      .output_names =
          [backward](const ParsedParams& p) {
            const auto& c = p.get<CustomParams>();
            if (!backward) return c.outputs;
            std::vector<std::string> names;
            for (const auto& a : c.arguments) names.push_back(a + "_grad");
            return names;
          },
      .backward = {.differentiable = !backward},
      .run_async =
          [backward](const ParsedParams& p, std::span<const NDArray> in,
                     std::span<const NDArray> out, engine::Completion done) {
            run_custom(p, in, out, std::move(done), backward);
          },
  };
}

}  // namespace

void register_op(const std::string& op_type, PropCreator creator) {
  NANOMX_CHECK(!op_type.empty()) << "register custom operator: empty op_type";
  NANOMX_CHECK(static_cast<bool>(creator))
      << "register custom operator " << op_type << ": empty creator";
  Registered& r = registered_ops();
  std::lock_guard lock(r.mutex);
  auto [it, inserted] = r.creators.insert_or_assign(op_type, std::move(creator));
  if (!inserted) {
    std::fprintf(stderr, "New registration is overriding existing custom operator %s\n",
                 op_type.c_str());
  }
}

bool registered(const std::string& op_type) {
  Registered& r = registered_ops();
  std::lock_guard lock(r.mutex);
  return r.creators.count(op_type) != 0;
}

}  // namespace nanomx::ops::custom

namespace nanomx::ops {

void register_custom_ops(Registry& r) {
  r.add(custom::custom_op(false));
  r.add(custom::custom_op(true));
}

// Custom's gradient: one _backward_Custom call on the output gradients, the inputs and the
// outputs (MXNet's order) and the auxiliary states; auxiliary states get no gradient.
void register_custom_gradient() {
  register_gradient("Custom", [](GradientBuilder& b) {
    const auto& p = b.params().get<custom::CustomParams>();
    const int n_args = static_cast<int>(p.arguments.size());
    const int n_out = b.num_outputs();
    std::vector<GradValue> in;
    // An output gradient backward does not read (a loss) is not asked of the caller: the output
    // stands in for it (same shape and dtype; MXNet passes an empty array there).
    for (int i = 0; i < n_out; ++i) {
      in.push_back(p.needs_out_grad[static_cast<size_t>(i)] ? b.out_grad(i) : b.output(i));
    }
    for (int i = 0; i < n_args; ++i) in.push_back(b.input(i));
    for (int i = 0; i < n_out; ++i) in.push_back(b.output(i));
    for (int i = n_args; i < b.num_inputs(); ++i) in.push_back(b.input(i));
    // The forward call's attributes, but not its input count (a graph node carries num_args).
    Attrs attrs;
    for (const auto& kv : b.attrs()) {
      if (kv.first != "num_args") attrs.push_back(kv);
    }
    std::vector<GradValue> grads = b.add("_backward_Custom", attrs, std::move(in));
    grads.resize(static_cast<size_t>(b.num_inputs()));  // auxiliary states: none
    return grads;
  });
}

}  // namespace nanomx::ops
