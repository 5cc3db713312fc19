// A non-owning reference to a callable (C++26's std::function_ref, reduced to what nanomx needs).
// It costs two words and one indirect call, and never allocates: for passing a lambda down a call
// that runs it before returning (the engine's inline path runs an operator's kernel through one
// without building the std::function a queued operation needs). The callable must outlive every
// call through the reference.
#pragma once

#include <memory>
#include <type_traits>
#include <utility>

namespace nanomx {

template <typename Signature>
class FunctionRef;

template <typename R, typename... Args>
class FunctionRef<R(Args...)> {
 public:
  template <typename F>
  requires(!std::is_same_v<std::remove_cvref_t<F>, FunctionRef> &&
           std::is_invocable_r_v<R, F&, Args...>) FunctionRef(F&& f)
  noexcept  // NOLINT(google-explicit-constructor): used as a parameter type
      : object_(const_cast<void*>(static_cast<const void*>(std::addressof(f)))),
        call_([](void* object, Args... args) -> R {
          return (*static_cast<std::remove_reference_t<F>*>(object))(std::forward<Args>(args)...);
        }) {}

  R operator()(Args... args) const { return call_(object_, std::forward<Args>(args)...); }

 private:
  void* object_;
  R (*call_)(void*, Args...);
};

}  // namespace nanomx
