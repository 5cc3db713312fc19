// The clock's resolution and the rounding of trace timestamps to it (docs/trace-format.md):
// a file prints no digit the clock cannot resolve, and ts + dur is exactly the rounded end.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <string>

#include "profiler/clock.h"
#include "profiler/hooks.h"
#include "profiler/name_table.h"
#include "profiler/record.h"
#include "profiler/trace_writer.h"
#include "trace_file.h"

namespace prof = nanomx::profiler;
using nanomx::testing::json;

namespace {

TEST(Clock, TimestampUnitIsTheLargestDecimalNotCoarserThanTheResolution) {
  EXPECT_EQ(prof::timestamp_unit_ns(0.0), 1u);
  EXPECT_EQ(prof::timestamp_unit_ns(0.4), 1u);  // bare-metal TSC at 2.5 GHz
  EXPECT_EQ(prof::timestamp_unit_ns(9.99), 1u);
  EXPECT_EQ(prof::timestamp_unit_ns(10.0), 10u);
  EXPECT_EQ(prof::timestamp_unit_ns(10.02), 10u);  // a hypervisor's 21-tick TSC step
  EXPECT_EQ(prof::timestamp_unit_ns(99.9), 10u);
  EXPECT_EQ(prof::timestamp_unit_ns(150), 100u);
  EXPECT_EQ(prof::timestamp_unit_ns(4e6), 1000u);  // a 4 ms jiffy clock: whole microseconds
}

// Fake counters for the measurement: a hypervisor's TSC that moves in 21-tick steps however
// often it is read, and the same counter once knocked off its grid by one tick.
uint64_t g_fake_ticks = 0;
int g_fake_reads = 0;
int g_fake_off_grid_at = -1;
uint64_t gridded_counter() {
  ++g_fake_reads;
  g_fake_ticks += 21 * static_cast<uint64_t>(1 + g_fake_reads % 5);  // uneven spacing
  if (g_fake_reads == g_fake_off_grid_at) g_fake_ticks += 1;
  return g_fake_ticks;
}
uint64_t stuck_counter() { return 1000; }

TEST(Clock, TickQuantumIsTheCommonStepOfTheReadings) {
  g_fake_ticks = 0, g_fake_reads = 0, g_fake_off_grid_at = -1;
  EXPECT_EQ(prof::measure_tick_quantum(gridded_counter, 4000), 21u);
  // One step off the grid while measuring makes the quantum finer, never coarser.
  g_fake_ticks = 0, g_fake_reads = 0, g_fake_off_grid_at = 1500;
  EXPECT_EQ(prof::measure_tick_quantum(gridded_counter, 4000), 1u);
  EXPECT_EQ(g_fake_reads, 1500) << "the measurement stops once it reaches 1";
  // A counter that never moved tells nothing: the finest unit, not a division by zero.
  EXPECT_EQ(prof::measure_tick_quantum(stuck_counter, 100), 1u);
}

// The live clock's quantum is whatever the load-time measurement found; what a test can hold
// it to is a sane size (a hypervisor's grid is tens of ticks, not a microsecond). That every
// later step stays on the grid is the hardware's business: a VM's TSC was seen to leave it.
TEST(Clock, LiveTickQuantumIsFinerThanAMicrosecond) {
  ASSERT_GE(prof::tick_quantum(), 1u);
  prof::TickConverter clock;
  clock.anchor_now();
  EXPECT_LT(clock.resolution_ns(), 1000.0) << "quantum " << prof::tick_quantum() << " ticks";
}

std::string number_after(const std::string& text, const std::string& key) {
  size_t at = text.find("\"" + key + "\":");
  EXPECT_NE(at, std::string::npos) << key;
  at += key.size() + 3;
  return text.substr(at, text.find_first_of(",}", at) - at);
}

// One complete event written with the given unit; returns the file's text.
std::string write_one_event(const std::string& path, const prof::TickConverter& clock,
                            uint64_t begin, uint64_t end, uint64_t zero_ns, uint64_t unit_ns) {
  prof::TraceWriter writer;
  writer.start_file(path, prof::DurationEvents::kComplete, false, zero_ns, unit_ns);
  prof::Record r{
      begin, end, prof::intern("rounded"), prof::intern("event"), 0, prof::RecordKind::kEvent,
      0,     0};
  writer.add(r, nullptr, 0, 1, clock);
  writer.commit("\"unit\":" + std::to_string(unit_ns));
  writer.close();
  return nanomx::testing::read_text(path);
}

int64_t rounded(int64_t ns, int64_t unit) {
  return ns >= 0 ? (ns + unit / 2) / unit * unit : -((unit / 2 - ns) / unit) * unit;
}

TEST(TraceWriter, TimestampsAndDurationsAreRoundedToTheUnitAndStayConsistent) {
  prof::TickConverter clock;
  clock.anchor_now();
  const std::string path = "rounded_" + std::to_string(getpid()) + ".json";
  for (uint64_t unit : {1u, 10u, 100u, 1000u}) {
    for (uint64_t span : {0ull, 1ull, 7ull, 21ull, 1234ull, 98765ull}) {
      const uint64_t begin = prof::now_ticks() + span * 3;
      const uint64_t end = begin + span;
      const int64_t b = static_cast<int64_t>(clock.to_ns(begin));
      const int64_t e = static_cast<int64_t>(clock.to_ns(end));
      // A zero after the event's start (an event in flight when the file began) as well.
      for (int64_t zero : {b / 2, b + 3}) {
        const std::string text = write_one_event(path, clock, begin, end, zero, unit);
        SCOPED_TRACE("unit " + std::to_string(unit) + " span " + std::to_string(span) + " zero " +
                     std::to_string(zero) + ": " + text);
        const json trace = json::parse(text);  // valid
        const int64_t rb = rounded(b - zero, static_cast<int64_t>(unit));
        const int64_t re = rounded(e - zero, static_cast<int64_t>(unit));
        const json& event = trace["traceEvents"].back();
        EXPECT_EQ(event["ts"].get<double>(), static_cast<double>(rb) / 1000.0);
        EXPECT_EQ(event["dur"].get<double>(), static_cast<double>(re - rb) / 1000.0);
        // No digit below the unit, no trailing zero.
        for (const char* key : {"ts", "dur"}) {
          const std::string number = number_after(text, key);
          const size_t dot = number.find('.');
          if (dot == std::string::npos) continue;
          const size_t digits = number.size() - dot - 1;
          EXPECT_LE(digits, 3 - static_cast<size_t>(std::log10(static_cast<double>(unit))))
              << key << " " << number;
          EXPECT_NE(number.back(), '0') << key << " " << number;
        }
      }
    }
  }
  ::unlink(path.c_str());
}

}  // namespace
