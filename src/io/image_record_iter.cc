#include "io/image_record_iter.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <fstream>
#include <numeric>
#include <opencv2/core/utility.hpp>
#include <random>

#include "io/recordio.h"
#include "nanomx/error.h"
#include "profiler/hooks.h"

namespace nanomx::io {
namespace {

// SplitMix64: decorrelated per-image seeds from (iterator seed, epoch, position).
uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

bool is_jpeg(std::string_view bytes) {
  return bytes.size() > 2 && static_cast<unsigned char>(bytes[0]) == 0xFF &&
         static_cast<unsigned char>(bytes[1]) == 0xD8;
}

// One operator event of the pipeline, on the calling thread, under the cpu/0 row.
struct Stage {
  explicit Stage(const char* name) : id(profiler::intern(name)) {}
  profiler::NameId id;
};
const Stage& stage_read() {
  static const Stage s("ImageRecordIter:read");
  return s;
}
const Stage& stage_decode() {
  static const Stage s("ImageRecordIter:decode");
  return s;
}
const Stage& stage_crop() {
  static const Stage s("ImageRecordIter:crop_resize");
  return s;
}
const Stage& stage_flip() {
  static const Stage s("ImageRecordIter:flip_color");
  return s;
}
const Stage& stage_norm() {
  static const Stage s("ImageRecordIter:normalize_cast");
  return s;
}
const Stage& stage_batch() {
  static const Stage s("ImageRecordIter:batchify");
  return s;
}
const Stage& stage_wait() {
  static const Stage s("wait for batch");
  return s;
}

int cpu_slot() {
  static const int slot = profiler::device_slot(profiler::device_code::kCPU, 0);
  return slot;
}

bool profiling() { return profiler::active(profiler::kImperative); }

void record(const Stage& stage, uint64_t begin, std::initializer_list<int64_t> in,
            std::initializer_list<int64_t> out) {
  const profiler::ShapeView ins[] = {{in.begin(), static_cast<int>(in.size())}};
  const profiler::ShapeView outs[] = {{out.begin(), static_cast<int>(out.size())}};
  profiler::OperatorShapes shapes;
  if (in.size() > 0) shapes.inputs = ins;
  if (out.size() > 0) shapes.outputs = outs;
  profiler::record_operator(stage.id, cpu_slot(), begin, profiler::now_ticks(), shapes);
}

}  // namespace

struct ImageRecordIter::Work {
  std::mutex mutex;
  std::condition_variable start_cv, done_cv;
  uint64_t round = 0;  // bumped for each batch handed to the helpers
  bool stop = false;
  int busy = 0;  // helpers inside the current round
  std::atomic<size_t> next{0};
  size_t count = 0;
  const Slot* slots = nullptr;
  const std::string* records = nullptr;  // one per slot (empty for image files)
  char* data = nullptr;
  size_t image_bytes = 0;
  float* labels = nullptr;
  std::mutex error_mutex;
  std::exception_ptr error;
};

ImageRecordIter::ImageRecordIter(ImageIterConfig config)
    : config_(std::move(config)), augmenter_(config_.aug), work_(std::make_unique<Work>()) {
  const ImageIterConfig& c = config_;
  NANOMX_CHECK(c.batch_size > 0) << c.name << ": batch_size must be positive, got " << c.batch_size;
  NANOMX_CHECK(c.label_width >= 1)
      << c.name << ": label_width must be at least 1, got " << c.label_width;
  NANOMX_CHECK(c.num_parts >= 1 && c.part_index >= 0 && c.part_index < c.num_parts)
      << c.name << ": part_index " << c.part_index << " is not in [0, num_parts=" << c.num_parts
      << ")";
  NANOMX_CHECK(c.aug.out_w > 0 && c.aug.out_h > 0)
      << c.name << ": data_shape's height and width must be positive";
  NANOMX_CHECK(c.aug.channels == 1 || c.aug.channels == 3 || c.aug.channels == 4)
      << c.name << ": data_shape's channel count " << c.aug.channels << " is not 1, 3 or 4";
  NANOMX_CHECK(!c.path_imgrec.empty() || !c.path_imglist.empty() || c.has_imglist)
      << c.name << ": give path_imgrec, path_imglist or imglist";
  config_.threads = std::clamp(config_.threads, 1, 64);
  // The pipeline's threads are the parallelism: OpenCV's own pool inside each resize would only
  // oversubscribe the cores (MXNet turns it off the same way).
  static std::once_flag opencv_threads;
  std::call_once(opencv_threads, [] { cv::setNumThreads(0); });
  config_.prefetch = std::clamp(config_.prefetch, 1, 16);
  load_items();
  for (int i = 1; i < config_.threads; ++i) helpers_.emplace_back([this, i] { helper_loop(i); });
  producer_ = std::thread([this] { producer_loop(); });
  start_epoch(false);
}

ImageRecordIter::~ImageRecordIter() {
  {
    std::lock_guard lock(mutex_);
    shutdown_ = true;
    ++generation_;
  }
  cv_.notify_all();
  producer_.join();
  {
    std::lock_guard lock(work_->mutex);
    work_->stop = true;
  }
  work_->start_cv.notify_all();
  for (auto& t : helpers_) t.join();
}

void ImageRecordIter::load_items() {
  const ImageIterConfig& c = config_;
  std::vector<ListEntry> list;
  if (c.has_imglist) {
    list = c.imglist;
  } else if (!c.path_imglist.empty()) {
    list = read_list(c.path_imglist);
  }
  const bool have_list = c.has_imglist || !c.path_imglist.empty();
  if (!c.path_imgrec.empty()) {
    RecordReader reader(c.path_imgrec);
    std::vector<IndexEntry> index;
    if (!c.path_imgidx.empty()) {
      index = read_index(c.path_imgidx, reader.file_size());
    } else {
      NANOMX_CHECK(!have_list) << c.name << ": path_imglist/imglist with path_imgrec needs "
                               << "path_imgidx (records are looked up by the list's index)";
      // No index: one pass over the chunk headers finds where each record starts.
      for (uint64_t key = 0;; ++key) {
        const uint64_t at = reader.tell();
        if (!reader.skip()) break;
        index.push_back({key, at});
      }
    }
    if (have_list) {
      std::vector<std::pair<uint64_t, uint64_t>> sorted;
      sorted.reserve(index.size());
      for (const auto& e : index) sorted.emplace_back(e.key, e.offset);
      std::sort(sorted.begin(), sorted.end());
      for (auto& e : list) {
        auto it =
            std::lower_bound(sorted.begin(), sorted.end(), std::make_pair(e.index, uint64_t{0}));
        NANOMX_CHECK(it != sorted.end() && it->first == e.index)
            << c.name << ": the list's index " << e.index << " is not a key of '" << c.path_imgidx
            << "'";
        items_.push_back({e.index, it->second, {}, std::move(e.labels)});
      }
    } else {
      for (const auto& e : index) items_.push_back({e.key, e.offset, {}, {}});
    }
  } else {
    for (auto& e : list) {
      std::string path = c.path_root.empty() ? e.path : c.path_root + "/" + e.path;
      items_.push_back({e.index, 0, std::move(path), std::move(e.labels)});
    }
  }
  for (const Item& item : items_) {
    if (!item.labels.empty()) {
      NANOMX_CHECK(static_cast<int>(item.labels.size()) == c.label_width)
          << c.name << ": image " << item.key << " of the list has " << item.labels.size()
          << " label(s) but label_width is " << c.label_width;
    }
  }
}

std::vector<ImageRecordIter::Planned> ImageRecordIter::plan_epoch() {
  // This epoch's order: the part's share, shuffled per epoch from the iterator's seed.
  const size_t n = items_.size();
  const size_t begin = n * config_.part_index / config_.num_parts;
  const size_t end = n * (config_.part_index + 1) / config_.num_parts;
  order_.resize(end - begin);
  std::iota(order_.begin(), order_.end(), begin);
  if (config_.shuffle) {
    std::mt19937_64 rng(mix(config_.seed ^ mix(epoch_ + 1)));
    std::shuffle(order_.begin(), order_.end(), rng);
  }
  const size_t bs = static_cast<size_t>(config_.batch_size);
  std::vector<Planned> plans;
  uint64_t serial = 0;
  auto slot = [&](size_t item) {
    return Slot{item, mix(config_.seed + mix(epoch_ * 0x1000003 + serial++))};
  };
  Planned current;
  current.slots = carry_;
  next_carry_.clear();
  for (size_t pos = 0; pos < order_.size(); ++pos) {
    current.slots.push_back(slot(order_[pos]));
    if (current.slots.size() == bs) {
      plans.push_back(std::move(current));
      current = Planned{};
    }
  }
  if (!current.slots.empty()) {
    switch (config_.last_batch) {
      case LastBatch::kDiscard:
        break;
      case LastBatch::kRollOver:
        next_carry_ = std::move(current.slots);
        break;
      case LastBatch::kPad: {
        // Filled from the start of this epoch's order; `pad` counts the fillers.
        current.pad = static_cast<int>(bs - current.slots.size());
        for (size_t k = 0; current.slots.size() < bs; ++k) {
          NANOMX_CHECK(!order_.empty()) << config_.name << ": no images to pad a batch with";
          current.slots.push_back(slot(order_[k % order_.size()]));
        }
        plans.push_back(std::move(current));
        break;
      }
    }
  }
  return plans;
}

void ImageRecordIter::start_epoch(bool keep_carry) {
  bool reached_end;
  {
    std::lock_guard lock(mutex_);
    reached_end = ended_;
  }
  stop_producer();
  // A rolled-over partial batch carries only when the consumer reached the end of the epoch.
  if (!keep_carry || !reached_end) next_carry_.clear();
  carry_ = next_carry_;
  auto plans = plan_epoch();
  ++epoch_;
  {
    std::lock_guard lock(mutex_);
    plans_ = std::move(plans);
    queue_.clear();
    ended_ = false;
    epoch_pending_ = true;
  }
  cv_.notify_all();
}

void ImageRecordIter::stop_producer() {
  std::unique_lock lock(mutex_);
  ++generation_;
  epoch_pending_ = false;
  queue_.clear();
  cv_.notify_all();
  cv_.wait(lock, [&] { return !producing_; });
  queue_.clear();
}

void ImageRecordIter::reset() { start_epoch(true); }

void ImageRecordIter::hard_reset() { start_epoch(false); }

void ImageRecordIter::producer_loop() {
  profiler::set_thread_name("io prefetch");
  std::unique_lock lock(mutex_);
  for (;;) {
    cv_.wait(lock, [&] { return shutdown_ || epoch_pending_; });
    if (shutdown_) return;
    epoch_pending_ = false;
    producing_ = true;
    const uint64_t generation = generation_;
    lock.unlock();
    produce_epoch(generation);
    lock.lock();
    producing_ = false;
    cv_.notify_all();
  }
}

void ImageRecordIter::produce_epoch(uint64_t generation) {
  std::vector<Planned> plans;
  {
    std::lock_guard lock(mutex_);
    plans.swap(plans_);
  }
  // Batch b + 1's records are read while the helpers work on batch b (make_batch).
  Records records, next_records;
  if (!plans.empty()) read_records(plans[0], records);
  for (size_t b = 0; b <= plans.size(); ++b) {
    Ready ready;
    if (b == plans.size()) {
      ready.end = true;
    } else if (records.error) {
      ready.error = records.error;
    } else {
      try {
        make_batch(plans[b], records, b + 1 < plans.size() ? &plans[b + 1] : nullptr, next_records,
                   ready.batch);
      } catch (...) {
        ready.error = std::current_exception();
      }
      std::swap(records, next_records);
    }
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] {
      return generation_ != generation || queue_.size() < static_cast<size_t>(config_.prefetch);
    });
    if (generation_ != generation) return;
    const bool stop = ready.end || ready.error;
    queue_.push_back(std::move(ready));
    cv_.notify_all();
    if (stop) return;
  }
}

bool ImageRecordIter::next(Batch& out) {
  const bool on = profiling();
  const uint64_t begin = on ? profiler::now_ticks() : 0;
  std::unique_lock lock(mutex_);
  if (ended_) return false;
  cv_.wait(lock, [&] { return !queue_.empty(); });
  Ready ready = std::move(queue_.front());
  queue_.pop_front();
  if (ready.error || ready.end) ended_ = true;
  cv_.notify_all();
  lock.unlock();
  if (on) record(stage_wait(), begin, {}, {config_.batch_size});
  if (ready.error) std::rethrow_exception(ready.error);
  if (ready.end) return false;
  out = std::move(ready.batch);
  return true;
}

void ImageRecordIter::read_records(const Planned& plan, Records& out) {
  const ImageIterConfig& c = config_;
  const bool on = profiling();
  // The batch's records, in order, on the prefetch thread (one file position).
  const uint64_t begin = on ? profiler::now_ticks() : 0;
  out.bytes.resize(plan.slots.size());
  out.error = nullptr;
  int64_t total = 0;
  try {
    if (!c.path_imgrec.empty()) {
      if (!reader_) reader_ = std::make_unique<RecordReader>(c.path_imgrec);
      RecordReader* reader = reader_.get();
      for (size_t i = 0; i < plan.slots.size(); ++i) {
        const Item& item = items_[plan.slots[i].item];
        reader->seek(item.offset);
        NANOMX_CHECK(reader->read(out.bytes[i]))
            << c.name << ": no record at byte offset " << item.offset << " of '" << c.path_imgrec
            << "' (key " << item.key << ")";
        total += static_cast<int64_t>(out.bytes[i].size());
      }
    } else {
      for (size_t i = 0; i < plan.slots.size(); ++i) {
        const Item& item = items_[plan.slots[i].item];
        std::ifstream in(item.path, std::ios::binary);
        NANOMX_CHECK(in.good()) << c.name << ": cannot open image file '" << item.path << "'";
        out.bytes[i].assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
        total += static_cast<int64_t>(out.bytes[i].size());
      }
    }
  } catch (...) {
    out.error = std::current_exception();
  }
  if (on) record(stage_read(), begin, {}, {static_cast<int64_t>(plan.slots.size()), total});
}

void ImageRecordIter::make_batch(const Planned& plan, const Records& records, const Planned* next,
                                 Records& next_records, Batch& out) {
  const ImageIterConfig& c = config_;
  const bool on = profiling();
  uint64_t begin = 0;
  const int64_t n = c.batch_size;
  const int64_t ch = c.aug.channels, h = c.aug.out_h, w = c.aug.out_w;
  NDArray data(Shape{n, ch, h, w}, Context::cpu(0),
               c.aug.uint8_out ? DType::kUint8 : DType::kFloat32);
  NDArray label = c.label_width == 1
                      ? NDArray(Shape{n}, Context::cpu(0), DType::kFloat32)
                      : NDArray(Shape{n, c.label_width}, Context::cpu(0), DType::kFloat32);

  Work& wk = *work_;
  {
    std::lock_guard lock(wk.mutex);
    wk.next.store(0, std::memory_order_relaxed);
    wk.count = plan.slots.size();
    wk.slots = plan.slots.data();
    wk.records = records.bytes.data();
    wk.data = static_cast<char*>(data.data());
    wk.image_bytes = static_cast<size_t>(ch * h * w) * (c.aug.uint8_out ? 1 : 4);
    wk.labels = label.data_as<float>();
    wk.error = nullptr;
    ++wk.round;
  }
  wk.start_cv.notify_all();
  // The next batch's records while the helpers start on this one; then this thread works too,
  // and waits for the helpers still inside the round.
  if (next != nullptr) read_records(*next, next_records);
  for (size_t i; (i = wk.next.fetch_add(1, std::memory_order_relaxed)) < wk.count;) {
    process_image(i);
  }
  {
    std::unique_lock lock(wk.mutex);
    wk.done_cv.wait(lock, [&] { return wk.busy == 0; });
    wk.count = 0;
  }
  if (wk.error) std::rethrow_exception(wk.error);

  begin = on ? profiler::now_ticks() : 0;
  out.data = std::move(data);
  out.label = std::move(label);
  out.pad = plan.pad;
  if (on) record(stage_batch(), begin, {n}, {n, ch, h, w});
}

void ImageRecordIter::helper_loop(int index) {
  profiler::set_thread_name("io worker " + std::to_string(index));
  Work& wk = *work_;
  uint64_t seen = 0;
  for (;;) {
    // The round's image count, read under the lock: a helper that wakes after the producer
    // ended the round (it waits only for the helpers already counted in `busy`) sees 0 and must
    // not touch `next`, which the producer resets for the next round without waiting for it.
    size_t count = 0;
    {
      std::unique_lock lock(wk.mutex);
      wk.start_cv.wait(lock, [&] { return wk.stop || wk.round != seen; });
      if (wk.stop) return;
      seen = wk.round;
      count = wk.count;
      ++wk.busy;
    }
    while (count > 0) {
      const size_t i = wk.next.fetch_add(1, std::memory_order_relaxed);
      if (i >= count) break;
      process_image(i);
    }
    {
      std::lock_guard lock(wk.mutex);
      --wk.busy;
    }
    wk.done_cv.notify_all();
  }
}

void ImageRecordIter::process_image(size_t i) {
  Work& wk = *work_;
  const ImageIterConfig& c = config_;
  const Slot& slot = wk.slots[i];
  const Item& item = items_[slot.item];
  try {
    const bool on = profiling();
    std::mt19937_64 rng(slot.seed);
    const std::string where = c.path_imgrec.empty()
                                  ? "'" + item.path + "'"
                                  : "of record " + std::to_string(item.key) + " at byte offset " +
                                        std::to_string(item.offset) + " of '" + c.path_imgrec + "'";
    std::string_view image(wk.records[i]);
    float* label = wk.labels + i * c.label_width;
    if (!c.path_imgrec.empty()) {
      ImageRecord rec = unpack_image_record(wk.records[i], where);
      image = rec.image;
      if (item.labels.empty()) {
        NANOMX_CHECK(static_cast<int>(rec.labels.size()) == c.label_width)
            << c.name << ": the image " << where << " has " << rec.labels.size()
            << " label(s) but label_width is " << c.label_width;
        std::copy(rec.labels.begin(), rec.labels.end(), label);
      }
    }
    if (!item.labels.empty()) std::copy(item.labels.begin(), item.labels.end(), label);

    uint64_t begin = on ? profiler::now_ticks() : 0;
    CropPlan crop;
    int src_w = 0, src_h = 0;
    int reduce = 1;
    const int flag = c.aug.channels == 1 ? 0 : c.aug.channels == 3 ? 1 : -1;
    cv::Mat decoded;
    if (peek_image_size(image, src_w, src_h)) {
      reduce = augmenter_.plan(src_w, src_h, rng, crop);
      if (!is_jpeg(image) || flag == -1) reduce = 1;
      decoded =
          decode_image(image, flag, false, reduce, where, augmenter_.rows_needed(crop, reduce));
    } else {
      decoded = decode_image(image, flag, false, 1, where);
      augmenter_.plan(decoded.cols, decoded.rows, rng, crop);
    }
    NANOMX_CHECK(decoded.channels() == c.aug.channels)
        << c.name << ": the image " << where << " has " << decoded.channels()
        << " channels, expected " << c.aug.channels;
    if (on) {
      record(stage_decode(), begin, {static_cast<int64_t>(image.size())},
             {decoded.rows, decoded.cols, decoded.channels()});
    }
    begin = on ? profiler::now_ticks() : 0;
    cv::Mat out = augmenter_.crop_resize(decoded, crop, reduce, rng);
    if (on) {
      record(stage_crop(), begin, {decoded.rows, decoded.cols, decoded.channels()},
             {out.rows, out.cols, out.channels()});
    }
    begin = on ? profiler::now_ticks() : 0;
    bool bgr = true;  // OpenCV's order until flip_color or normalize_into swaps it
    augmenter_.flip_color(out, bgr, rng);
    if (on) {
      record(stage_flip(), begin, {out.rows, out.cols, out.channels()},
             {out.rows, out.cols, out.channels()});
    }
    begin = on ? profiler::now_ticks() : 0;
    augmenter_.normalize_into(out, bgr, wk.data + i * wk.image_bytes);
    if (on) {
      record(stage_norm(), begin, {out.rows, out.cols, out.channels()},
             {out.channels(), out.rows, out.cols});
    }
  } catch (...) {
    std::lock_guard lock(wk.error_mutex);
    if (!wk.error) wk.error = std::current_exception();
  }
}

}  // namespace nanomx::io
