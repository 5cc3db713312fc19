#include "io/im2rec.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <opencv2/imgproc.hpp>
#include <thread>

#include "io/image.h"
#include "io/image_record.h"
#include "io/recordio.h"
#include "nanomx/error.h"

namespace fs = std::filesystem;

namespace nanomx::io {
namespace {

struct Options {
  std::string prefix, root;
  bool list = false, recursive = false, shuffle = true;
  std::vector<std::string> exts = {".jpeg", ".jpg", ".png"};
  int chunks = 1;
  double train_ratio = 1.0, test_ratio = 0.0;
  int resize = 0, quality = 95, num_thread = 1, color = 1;
  bool center_crop = false, pass_through = false, pack_label = false;
  std::string encoding = ".jpg";
};

const char kUsage[] =
    "usage: im2rec [-h] [--list] [--exts EXT [EXT ...]] [--chunks N] [--train-ratio R]\n"
    "              [--test-ratio R] [--recursive] [--no-shuffle] [--pass-through]\n"
    "              [--resize N] [--center-crop] [--quality Q] [--num-thread K]\n"
    "              [--color {-1,0,1}] [--encoding {.jpg,.png}] [--pack-label] prefix root\n";

// Python's random module (Mersenne Twister seeded by init_by_array, shuffle by _randbelow), so
// that `--list` writes the same order as MXNet's im2rec.py (random.seed(100)).
class PyRandom {
 public:
  explicit PyRandom(uint32_t seed) {
    init_genrand(19650218u);
    uint32_t i = 1, j = 0;
    const uint32_t key[1] = {seed};
    for (int k = kN; k; --k) {
      mt_[i] = (mt_[i] ^ ((mt_[i - 1] ^ (mt_[i - 1] >> 30)) * 1664525u)) + key[j] + j;
      ++i;
      ++j;
      if (i >= kN) {
        mt_[0] = mt_[kN - 1];
        i = 1;
      }
      if (j >= 1) j = 0;
    }
    for (int k = kN - 1; k; --k) {
      mt_[i] = (mt_[i] ^ ((mt_[i - 1] ^ (mt_[i - 1] >> 30)) * 1566083941u)) - i;
      ++i;
      if (i >= kN) {
        mt_[0] = mt_[kN - 1];
        i = 1;
      }
    }
    mt_[0] = 0x80000000u;
  }
  template <typename T>
  void shuffle(std::vector<T>& x) {
    for (size_t i = x.size(); i-- > 1;) std::swap(x[i], x[randbelow(static_cast<uint32_t>(i + 1))]);
  }

 private:
  static constexpr int kN = 624, kM = 397;
  void init_genrand(uint32_t s) {
    mt_[0] = s;
    for (mti_ = 1; mti_ < kN; ++mti_) {
      mt_[mti_] = 1812433253u * (mt_[mti_ - 1] ^ (mt_[mti_ - 1] >> 30)) + mti_;
    }
  }
  uint32_t genrand() {
    static const uint32_t mag01[2] = {0, 0x9908b0dfu};
    if (mti_ >= kN) {
      int kk = 0;
      for (; kk < kN - kM; ++kk) {
        const uint32_t y = (mt_[kk] & 0x80000000u) | (mt_[kk + 1] & 0x7fffffffu);
        mt_[kk] = mt_[kk + kM] ^ (y >> 1) ^ mag01[y & 1];
      }
      for (; kk < kN - 1; ++kk) {
        const uint32_t y = (mt_[kk] & 0x80000000u) | (mt_[kk + 1] & 0x7fffffffu);
        mt_[kk] = mt_[kk + (kM - kN)] ^ (y >> 1) ^ mag01[y & 1];
      }
      const uint32_t y = (mt_[kN - 1] & 0x80000000u) | (mt_[0] & 0x7fffffffu);
      mt_[kN - 1] = mt_[kM - 1] ^ (y >> 1) ^ mag01[y & 1];
      mti_ = 0;
    }
    uint32_t y = mt_[mti_++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= y >> 18;
    return y;
  }
  uint32_t randbelow(uint32_t n) {
    const int k = 32 - __builtin_clz(n);  // n.bit_length()
    uint32_t r = genrand() >> (32 - k);
    while (r >= n) r = genrand() >> (32 - k);
    return r;
  }
  uint32_t mt_[kN];
  int mti_ = kN + 1;
};

bool parse_args(const std::vector<std::string>& args, Options& o, std::string& error) {
  std::vector<std::string> positional;
  auto value = [&](size_t& i, const std::string& name) -> const std::string* {
    if (i + 1 >= args.size()) {
      error = "argument " + name + ": expected a value";
      return nullptr;
    }
    return &args[++i];
  };
  try {
    for (size_t i = 0; i < args.size(); ++i) {
      const std::string& a = args[i];
      const std::string* v = nullptr;
      if (a == "--list") {
        o.list = true;
      } else if (a == "--recursive") {
        o.recursive = true;
      } else if (a == "--no-shuffle") {
        o.shuffle = false;
      } else if (a == "--shuffle") {
        // MXNet 1.9.1 has `--shuffle BOOL`; a bare --shuffle means on.
        if (i + 1 < args.size() && (args[i + 1] == "True" || args[i + 1] == "False" ||
                                    args[i + 1] == "1" || args[i + 1] == "0")) {
          o.shuffle = args[i + 1] == "True" || args[i + 1] == "1";
          ++i;
        } else {
          o.shuffle = true;
        }
      } else if (a == "--pass-through") {
        o.pass_through = true;
      } else if (a == "--center-crop") {
        o.center_crop = true;
      } else if (a == "--pack-label") {
        o.pack_label = true;
      } else if (a == "--exts") {
        o.exts.clear();
        while (i + 1 < args.size() && args[i + 1].rfind("--", 0) != 0) o.exts.push_back(args[++i]);
        if (o.exts.empty()) {
          error = "argument --exts: expected at least one extension";
          return false;
        }
      } else if (a == "--chunks" || a == "--resize" || a == "--quality" || a == "--num-thread" ||
                 a == "--color") {
        if (!(v = value(i, a))) return false;
        const int n = std::stoi(*v);
        if (a == "--chunks") o.chunks = n;
        if (a == "--resize") o.resize = n;
        if (a == "--quality") o.quality = n;
        if (a == "--num-thread") o.num_thread = n;
        if (a == "--color") o.color = n;
      } else if (a == "--train-ratio" || a == "--test-ratio") {
        if (!(v = value(i, a))) return false;
        (a == "--train-ratio" ? o.train_ratio : o.test_ratio) = std::stod(*v);
      } else if (a == "--encoding") {
        if (!(v = value(i, a))) return false;
        o.encoding = *v;
      } else if (a.rfind("--", 0) == 0 || (a.size() > 1 && a[0] == '-')) {
        error = "unrecognized argument: " + a;
        return false;
      } else {
        positional.push_back(a);
      }
    }
  } catch (const std::exception&) {
    error = "a numeric option has a value that is not a number";
    return false;
  }
  if (positional.size() != 2) {
    error = "expected the arguments prefix and root, got " + std::to_string(positional.size());
    return false;
  }
  if (o.color < -1 || o.color > 1) {
    error = "argument --color: " + std::to_string(o.color) + " is not -1, 0 or 1";
    return false;
  }
  if (o.encoding != ".jpg" && o.encoding != ".png") {
    error = "argument --encoding: '" + o.encoding + "' is not .jpg or .png";
    return false;
  }
  if (o.chunks < 1 || o.num_thread < 1) {
    error = "--chunks and --num-thread must be at least 1";
    return false;
  }
  o.prefix = fs::absolute(positional[0]).string();
  o.root = fs::absolute(positional[1]).string();
  return true;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), ::tolower);
  return s;
}

int make_list(const Options& o) {
  std::vector<ListEntry> items;
  const auto matches = [&](const fs::path& p) {
    const std::string ext = lower(p.extension().string());
    return std::find(o.exts.begin(), o.exts.end(), ext) != o.exts.end();
  };
  // (A helper, not a braced initializer: GCC 12 warns falsely on a one-float vector there.)
  const auto add = [&](float label, std::string path) {
    ListEntry e;
    e.index = items.size();
    e.labels.assign(1, label);
    e.path = std::move(path);
    items.push_back(std::move(e));
  };
  NANOMX_CHECK(fs::is_directory(o.root)) << "im2rec: root '" << o.root << "' is not a folder";
  if (o.recursive) {
    // os.walk order: a folder's files (sorted), then its sub-folders (sorted), depth first.
    std::vector<std::pair<std::string, int>> labels;
    std::vector<fs::path> stack = {fs::path(o.root)};
    while (!stack.empty()) {
      const fs::path dir = stack.back();
      stack.pop_back();
      std::vector<fs::path> files, dirs;
      for (const auto& e : fs::directory_iterator(dir)) {
        if (e.is_directory()) {
          dirs.push_back(e.path());
        } else if (matches(e.path())) {
          files.push_back(e.path());
        }
      }
      std::sort(files.begin(), files.end());
      std::sort(dirs.begin(), dirs.end());
      if (!files.empty()) {
        const int label = static_cast<int>(labels.size());
        labels.emplace_back(fs::relative(dir, o.root).string(), label);
        for (const auto& f : files) {
          add(static_cast<float>(label), fs::relative(f, o.root).string());
        }
      }
      for (auto it = dirs.rbegin(); it != dirs.rend(); ++it) stack.push_back(*it);
    }
    for (const auto& [path, label] : labels) std::printf("%s %d\n", path.c_str(), label);
  } else {
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(o.root)) {
      if (!e.is_directory() && matches(e.path())) files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
    for (const auto& f : files) add(0.0f, f.filename().string());
  }
  if (o.shuffle) PyRandom(100).shuffle(items);
  const size_t n = items.size();
  const size_t chunk_size = (n + o.chunks - 1) / o.chunks;
  for (int i = 0; i < o.chunks; ++i) {
    const size_t begin = std::min(n, i * chunk_size), end = std::min(n, begin + chunk_size);
    std::vector<ListEntry> chunk(items.begin() + begin, items.begin() + end);
    const std::string base = o.prefix + (o.chunks > 1 ? "_" + std::to_string(i) : "");
    const auto write = [](const std::string& path, auto first, auto last) {
      std::ofstream out(path, std::ios::binary | std::ios::trunc);
      NANOMX_CHECK(out.good()) << "im2rec: cannot write '" << path << "'";
      for (auto it = first; it != last; ++it) out << format_list_line(*it);
    };
    if (o.train_ratio == 1.0) {
      write(base + ".lst", chunk.begin(), chunk.end());
    } else {
      const size_t cs = chunk.size();
      const size_t sep_test = static_cast<size_t>(cs * o.test_ratio);
      const size_t sep = static_cast<size_t>(cs * o.train_ratio);
      if (o.test_ratio != 0) write(base + "_test.lst", chunk.begin(), chunk.begin() + sep_test);
      const size_t train_end = std::min(cs, sep_test + sep);
      write(base + "_train.lst", chunk.begin() + sep_test, chunk.begin() + train_end);
      if (o.test_ratio + o.train_ratio < 1.0) {
        write(base + "_val.lst", chunk.begin() + train_end, chunk.end());
      }
    }
  }
  return 0;
}

// One packed record, or why the image was skipped.
struct Packed {
  std::string record;
  std::string error;
};

Packed pack_one(const Options& o, const ListEntry& e) {
  Packed p;
  try {
    const std::string path = (fs::path(o.root) / e.path).string();
    std::ifstream in(path, std::ios::binary);
    NANOMX_CHECK(in.good()) << "cannot open the file";
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ImageRecordHeader h;
    h.id = e.index;
    const bool multi = o.pack_label && e.labels.size() > 1;
    std::vector<float> labels = e.labels;
    if (!multi && labels.size() > 1) labels.erase(labels.begin() + 1, labels.end());
    std::string image;
    if (o.pass_through) {
      image = std::move(bytes);
    } else {
      cv::Mat m = decode_image(bytes, o.color, false, 1, "'" + path + "'");
      if (o.center_crop && m.rows != m.cols) {
        const int side = std::min(m.rows, m.cols);
        m = m(cv::Rect((m.cols - side) / 2, (m.rows - side) / 2, side, side));
      }
      if (o.resize > 0) {
        int nw, nh;
        if (m.cols > m.rows) {
          nh = o.resize;
          nw = static_cast<int>(int64_t{m.cols} * o.resize / m.rows);
        } else {
          nw = o.resize;
          nh = static_cast<int>(int64_t{m.rows} * o.resize / m.cols);
        }
        m = resize(m, nw, nh, 1);
      }
      image = encode_image(m, o.encoding, o.quality);
    }
    p.record = pack_image_record(h, labels, image, multi);
  } catch (const std::exception& ex) {
    p.error = ex.what();
  }
  return p;
}

std::vector<std::string> list_files(const Options& o) {
  std::vector<std::string> out;
  if (fs::is_directory(o.prefix)) {
    for (const auto& e : fs::directory_iterator(o.prefix)) {
      if (e.path().extension() == ".lst") out.push_back(e.path().string());
    }
  } else {
    const fs::path dir = fs::path(o.prefix).parent_path();
    if (fs::is_directory(dir)) {
      for (const auto& e : fs::directory_iterator(dir)) {
        const std::string s = e.path().string();
        if (s.rfind(o.prefix, 0) == 0 && e.path().extension() == ".lst") out.push_back(s);
      }
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

int pack_list(const Options& o, const std::string& lst) {
  const fs::path base = fs::path(lst).replace_extension("");
  std::printf("Creating .rec file from %s in %s\n", lst.c_str(),
              fs::path(lst).parent_path().c_str());
  std::fflush(stdout);
  const std::vector<ListEntry> items = read_list(lst);
  const std::string rec = base.string() + ".rec", idx = base.string() + ".idx";
  const std::string rec_tmp = rec + ".tmp", idx_tmp = idx + ".tmp";
  size_t written = 0, skipped = 0;
  const bool tty = isatty(fileno(stderr)) != 0;
  const auto start = std::chrono::steady_clock::now();
  try {
    RecordWriter writer(rec_tmp);
    std::ofstream index(idx_tmp, std::ios::binary | std::ios::trunc);
    NANOMX_CHECK(index.good()) << "im2rec: cannot write '" << idx_tmp << "'";
    // Blocks of items are packed in parallel and written in list order.
    const size_t block = static_cast<size_t>(std::max(64, 16 * o.num_thread));
    std::vector<Packed> packed;
    for (size_t first = 0; first < items.size(); first += block) {
      const size_t count = std::min(block, items.size() - first);
      packed.assign(count, Packed{});
      std::atomic<size_t> next{0};
      auto work = [&] {
        for (size_t i; (i = next.fetch_add(1)) < count;) packed[i] = pack_one(o, items[first + i]);
      };
      std::vector<std::thread> threads;
      for (int t = 1; t < o.num_thread; ++t) threads.emplace_back(work);
      work();
      for (auto& t : threads) t.join();
      for (size_t i = 0; i < count; ++i) {
        const ListEntry& e = items[first + i];
        if (!packed[i].error.empty()) {
          std::fprintf(stderr, "%sim2rec: warning: skipping '%s' (list index %llu): %s\n",
                       tty ? "\r" : "", e.path.c_str(), static_cast<unsigned long long>(e.index),
                       packed[i].error.c_str());
          ++skipped;
          continue;
        }
        index << e.index << '\t' << writer.tell() << '\n';
        writer.write(packed[i].record);
        ++written;
      }
      if (tty) {
        const double sec =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        std::fprintf(stderr, "\rim2rec: %zu/%zu images, %.0f img/s", first + count, items.size(),
                     sec > 0 ? (first + count) / sec : 0.0);
        std::fflush(stderr);
      }
    }
    if (tty) std::fprintf(stderr, "\n");
    writer.close();
    index.close();
    NANOMX_CHECK(index.good()) << "im2rec: writing '" << idx_tmp << "' failed";
    fs::rename(rec_tmp, rec);
    fs::rename(idx_tmp, idx);
  } catch (...) {
    std::error_code ignored;
    fs::remove(rec_tmp, ignored);
    fs::remove(idx_tmp, ignored);
    throw;
  }
  const double sec =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("im2rec: %s: %zu images written, %zu skipped, %.2f s\n", rec.c_str(), written,
              skipped, sec);
  std::fflush(stdout);
  return 0;
}

}  // namespace

int im2rec_main(const std::vector<std::string>& args) {
  Options o;
  std::string error;
  if (std::find(args.begin(), args.end(), "-h") != args.end() ||
      std::find(args.begin(), args.end(), "--help") != args.end()) {
    std::printf("%s", kUsage);
    return 0;
  }
  if (!parse_args(args, o, error)) {
    std::fprintf(stderr, "%sim2rec: error: %s\n", kUsage, error.c_str());
    return 2;
  }
  try {
    if (o.list) return make_list(o);
    const auto lists = list_files(o);
    if (lists.empty()) {
      std::printf("Did not find and list file with prefix %s\n", o.prefix.c_str());
      return 1;
    }
    for (const auto& lst : lists) pack_list(o, lst);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "im2rec: error: %s\n", e.what());
    return 1;
  }
  return 0;
}

}  // namespace nanomx::io
