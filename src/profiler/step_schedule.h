// Steps and the step schedule (docs/profiler.md#step-schedules): the arithmetic of
// torch.profiler.schedule, kept free of the profiler's state so that it reads as the rule it is.
// What a step does to the recording (the gate, the window's file) is Profiler::begin_step and
// its neighbours, in step_schedule.cc.
#pragma once

#include <cstdint>
#include <string>

#include "nanomx/profiler.h"

namespace nanomx::profiler {

// What a step does under a schedule: torch.profiler.ProfilerAction. Without a schedule every
// step is kRecord.
enum class StepAction { kNone, kWarmup, kRecord, kRecordAndSave };

// torch.profiler.schedule's action for step `n`: `skip_first` steps off, then cycles of `wait`
// steps off, `warmup` steps recorded and discarded and `active` steps kept, the last active step
// of a cycle saving the window; after `repeat` cycles (0: never) every step is off.
StepAction schedule_action(const Config::Schedule& schedule, uint64_t n);

// The last step of the cycle that step `n` belongs to: the last active step of its window.
uint64_t window_last_step(const Config::Schedule& schedule, uint64_t n);

// The file of the window whose last active step is `last_step`: `<stem>.step<last>.json`, next
// to the configured file.
std::string window_file(const std::string& configured_file, uint64_t last_step);

}  // namespace nanomx::profiler
