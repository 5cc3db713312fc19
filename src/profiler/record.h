// The fixed-size record every event becomes on the hot path.
#pragma once

#include <cstdint>

#include "nanomx/profiler.h"

namespace nanomx::profiler {

enum class RecordKind : uint8_t {
  kOperator,    // [begin, value=end] on device slot `slot`; `payload` records of raw
                // shape words follow it (four int64 each; they have no kind of their own)
  kTask,        // user Task or C API call: `b`/`e`, id = tid
  kFrame,       // async slice `b`/`e`, id = payload (frame instance)
  kEvent,       // `B`/`E` (or `X`), category "event"
  kCounter,     // `C`, value = counter value
  kMarker,      // `n`, payload = scope letter
  kFlowStart,   // `s`, value = flow id
  kFlowFinish,  // `f` bound to the enclosing slice, value = flow id
  // `s` of a dependency flow (category "dependency") on the device row `slot`, at the end of
  // the operation whose completion made another one ready; value = flow id.
  kDependencyStart,
  // A step of profiler::step(): one `X` event "ProfilerStep#<payload>" (category
  // "ProfilerStep"), whatever duration_events says, [begin, value=end].
  kStep,
};

struct Record {
  uint64_t begin;  // ticks
  uint64_t value;  // end ticks, counter value or flow id, by kind
  NameId name;
  NameId category;
  uint32_t payload;
  RecordKind kind;
  uint8_t flags;  // reserved
  uint16_t slot;  // device slot of an operator
};
static_assert(sizeof(Record) == 32, "a record must stay 32 bytes (one half cache line)");

// A flow id is the pushing thread's tid above a sequence number that thread counts up from 1,
// so the writer can tell from the id alone whose start a finish needs.
constexpr int kFlowSequenceBits = 40;
constexpr uint64_t kFlowSequenceMask = (uint64_t{1} << kFlowSequenceBits) - 1;

}  // namespace nanomx::profiler
