// What the crash-safe commit (src/profiler/crash_safe_file.h) costs per flush, beside the plain
// append it replaced, at 100 MB/s of trace: a continuous dump every 0.1 s writes 10 MB of
// events per flush. Each scheme writes the same text for `flushes` flushes, alternating the
// schemes flush by flush so that both see the same machine state; prints the median and p90
// time per flush and per MB. The text is formatted once beforehand: this measures the file
// side only (formatting costs the same in both schemes).
//
//   profiler_commit_bench [dir=.] [flushes=30] [mb_per_flush=10] [fsync=0]
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "profiler/crash_safe_file.h"

namespace {

using Clock = std::chrono::steady_clock;

// The scheme before the crash-safe commit: the events and the closing part written in place
// where the previous flush's events ended, then the file cut to size.
class PlainAppend {
 public:
  explicit PlainAppend(const std::string& path)
      : fd_(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) {
    if (fd_ < 0) std::perror(path.c_str()), std::exit(1);
  }
  ~PlainAppend() { ::close(fd_); }
  void flush(const std::string& events, const std::string& trailer, bool sync) {
    std::string text = events + trailer;  // one pwrite, as the old writer did
    write_all(text, end_);
    end_ += events.size();
    if (::ftruncate(fd_, static_cast<off_t>(end_ + trailer.size())) != 0) std::exit(1);
    if (sync) ::fdatasync(fd_);
  }

 private:
  void write_all(const std::string& text, uint64_t offset) {
    for (size_t done = 0; done < text.size();) {
      ssize_t n =
          ::pwrite(fd_, text.data() + done, text.size() - done, static_cast<off_t>(offset + done));
      if (n <= 0) std::perror("pwrite"), std::exit(1);
      done += static_cast<size_t>(n);
    }
  }
  int fd_;
  uint64_t end_ = 0;
};

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5)];
}

}  // namespace

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : ".";
  const int flushes = argc > 2 ? std::atoi(argv[2]) : 30;
  const double mb = argc > 3 ? std::atof(argv[3]) : 10.0;
  const bool sync = argc > 4 && std::atoi(argv[4]) != 0;
  // Event-like lines of ~120 bytes, as the profiler writes them.
  const std::string line =
      ",\n{\"name\":\"broadcast_add\",\"cat\":\"operator\",\"ph\":\"B\",\"ts\":123456.789,"
      "\"pid\":0,\"tid\":3,\"args\":{\"inputs\":[[256],[256]]}}";
  std::string events;
  while (events.size() < static_cast<size_t>(mb * 1e6)) events += line;
  const std::string trailer =
      "\n],\"displayTimeUnit\":\"ms\",\"otherData\":{\"producer\":\"nanomx\",\"dropped_events\":0}}"
      "\n";

  const std::string plain_path = dir + "/commit_bench_plain.json";
  const std::string safe_path = dir + "/commit_bench_safe.json";
  std::vector<double> plain_ms, safe_ms;
  {
    PlainAppend plain(plain_path);
    nanomx::profiler::CrashSafeFile safe;
    safe.open(safe_path, sync);
    plain.flush("{\"traceEvents\":[\n{}", trailer, sync);
    safe.append("{\"traceEvents\":[\n{}");
    safe.commit(trailer);
    for (int i = 0; i < flushes; ++i) {
      auto t0 = Clock::now();
      plain.flush(events, trailer, sync);
      auto t1 = Clock::now();
      safe.append(events);
      safe.commit(trailer);
      auto t2 = Clock::now();
      plain_ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
      safe_ms.push_back(std::chrono::duration<double, std::milli>(t2 - t1).count());
    }
    std::printf("crash-safe file used %s\n",
                safe.exchanges() ? "RENAME_EXCHANGE" : "the full-copy fallback");
    safe.close();
  }
  std::remove(plain_path.c_str());
  std::remove(safe_path.c_str());
  const double per_flush_mb = static_cast<double>(events.size()) / 1e6;
  std::printf("%d flushes of %.1f MB in %s%s (median / p90 ms per flush; ms per MB at median)\n",
              flushes, per_flush_mb, dir.c_str(), sync ? ", fsync on" : "");
  std::printf("| scheme | ms per flush (median) | p90 | ms per MB |\n|---|---|---|---|\n");
  for (auto [name, v] : {std::pair{"plain append (before)", &plain_ms},
                         std::pair{"crash-safe commit (now)", &safe_ms}}) {
    std::printf("| %s | %.2f | %.2f | %.3f |\n", name, percentile(*v, 0.5), percentile(*v, 0.9),
                percentile(*v, 0.5) / per_flush_mb);
  }
  return 0;
}
