// Domain, Task, Frame, Event, Counter, Marker: MXNet's custom profiling objects
// (docs/mxnet-compat.md#user-objects).
#include <atomic>
#include <vector>

#include "nanomx/error.h"
#include "nanomx/profiler.h"
#include "profiler/external_ranges.h"
#include "profiler/hooks.h"
#include "profiler/recording.h"

namespace nanomx::profiler {

namespace {
std::atomic<uint32_t> g_frame_instances{0};
}

Domain::Domain(std::string_view name) : name_(name) {
  NANOMX_CHECK(!name.empty()) << "profiler: a Domain needs a non-empty name";
  id_ = intern(name);
}

Duration::Duration(Kind kind, NameId name, NameId category)
    : kind_(kind),
      name_(name),
      category_(category),
      instance_(kind == Kind::kFrame ? g_frame_instances.fetch_add(1) + 1 : 0) {}

namespace {
// The user objects whose external (NVTX) range is open on this thread, innermost last: a range is
// closed by the stop() of the object that opened it (profiling may have stopped in between).
thread_local std::vector<const Duration*> t_external_open;
}  // namespace

void Duration::start() {
  start_ticks_ = now_ticks();
  if (active(detail::kUserBit) && external_ranges_on()) {
    external_range_push(name_of(name_).c_str());
    t_external_open.push_back(this);
  }
}

void Duration::stop() {
  uint64_t end = now_ticks();
  if (!t_external_open.empty() && t_external_open.back() == this) {
    t_external_open.pop_back();
    external_range_pop();
  }
  NANOMX_CHECK(start_ticks_ != 0) << "profiler: stop() of '" << name_of(name_)
                                  << "', which was never started (call start() first)";
  // As MXNet: gated only by the pause flag at stop time.
  if (!active(detail::kUserBit)) return;
  RecordKind kind = kind_ == Kind::kTask    ? RecordKind::kTask
                    : kind_ == Kind::kFrame ? RecordKind::kFrame
                                            : RecordKind::kEvent;
  internal::record_duration(kind, category_, name_, instance_, start_ticks_, end);
}

namespace {
NameId checked_name(std::string_view name, const char* what) {
  NANOMX_CHECK(!name.empty()) << "profiler: a " << what << " needs a non-empty name";
  return intern(name);
}
}  // namespace

Task::Task(const Domain& domain, std::string_view name)
    : Duration(Kind::kTask, checked_name(name, "Task"), domain.id()) {}

Frame::Frame(const Domain& domain, std::string_view name)
    : Duration(Kind::kFrame, checked_name(name, "Frame"), intern(domain.name() + ",frame")) {}

Event::Event(std::string_view name)
    : Duration(Kind::kEvent, checked_name(name, "Event"), internal::event_category()) {}

Counter::Counter(const Domain& domain, std::string_view name)
    : name_(checked_name(name, "Counter")), category_(domain.id()) {}

void Counter::set_value(uint64_t value) {
  value_.store(value, std::memory_order_relaxed);
  emit(value);
}

void Counter::increment(int64_t delta) {
  // Unsigned wrap-around below zero, as MXNet's C API adjust (MXProfileAdjustCounter).
  uint64_t value = value_.fetch_add(static_cast<uint64_t>(delta), std::memory_order_relaxed) +
                   static_cast<uint64_t>(delta);
  emit(value);
}

void Counter::emit(uint64_t value) {
  if (!active(detail::kUserBit)) return;  // the value changes while paused; records do not
  internal::record_user_counter(category_, name_, value);
}

Marker::Marker(const Domain& domain, std::string_view name)
    : name_(checked_name(name, "Marker")), category_(intern(domain.name() + ",instant_marker")) {}

void Marker::mark(MarkerScope scope) {
  if (!active(detail::kUserBit)) return;
  internal::record_marker(category_, name_, scope);
}

}  // namespace nanomx::profiler
