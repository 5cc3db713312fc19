#pragma once

#include <cstddef>
#include <memory>

#include "nanomx/engine.h"

namespace nanomx::engine {
std::unique_ptr<Engine> make_threaded_engine(int cpu_workers, size_t inline_bytes);
std::unique_ptr<Engine> make_naive_engine();
}  // namespace nanomx::engine
