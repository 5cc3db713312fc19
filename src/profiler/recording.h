// Recording functions shared by the profiler's own files (hooks in profiler.cc, user objects
// in user_objects.cc). Not part of the public interface.
#pragma once

#include <cstdint>

#include "profiler/hooks.h"
#include "profiler/record.h"

namespace nanomx::profiler::internal {
void record_duration(RecordKind kind, NameId category, NameId name, uint32_t payload,
                     uint64_t begin, uint64_t end);
void record_user_counter(NameId category, NameId name, uint64_t value);
void record_marker(NameId category, NameId name, MarkerScope scope);
NameId event_category();
}  // namespace nanomx::profiler::internal
