// The image pipeline behind mx.img.ImageIter and mx.io.ImageRecordIter: records (or image files)
// are read, decoded, cropped/resized, flipped/colour-jittered and normalised into float32 NCHW
// batches by a pool of threads, while a prefetch queue keeps batches ready ahead of the consumer.
// Each stage is an operator event on the thread that ran it; the consumer's wait is a `wait for
// batch` event (docs/io.md, "The pipeline's threads and events").
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "io/image.h"
#include "io/image_record.h"
#include "nanomx/ndarray.h"

namespace nanomx::io {

class RecordReader;

enum class LastBatch { kPad, kDiscard, kRollOver };

struct ImageIterConfig {
  std::string path_imgrec, path_imgidx, path_imglist, path_root;
  std::vector<ListEntry> imglist;  // used when has_imglist (Python's imglist argument)
  bool has_imglist = false;
  int batch_size = 0;
  int label_width = 1;
  bool shuffle = false;
  int part_index = 0, num_parts = 1;
  LastBatch last_batch = LastBatch::kPad;
  AugmentConfig aug;  // out_w/out_h/channels are the data shape
  uint64_t seed = 0;
  int threads = 1;                 // decode/augment threads (the prefetch thread is one of them)
  int prefetch = 2;                // batches kept ready
  std::string name = "ImageIter";  // in errors
};

struct Batch {
  NDArray data;   // (N, C, H, W) float32 (uint8 with aug.uint8_out)
  NDArray label;  // (N,) or (N, label_width) float32
  int pad = 0;
};

class ImageRecordIter {
 public:
  explicit ImageRecordIter(ImageIterConfig config);
  ~ImageRecordIter();
  ImageRecordIter(const ImageRecordIter&) = delete;
  ImageRecordIter& operator=(const ImageRecordIter&) = delete;

  // The next batch; false at the end of the epoch (until reset()). Rethrows a pipeline error.
  bool next(Batch& out);
  // Starts the next epoch: reshuffles (shuffle), rewinds; keeps a rolled-over partial batch.
  void reset();
  // Also drops a rolled-over partial batch.
  void hard_reset();
  size_t num_items() const { return items_.size(); }
  const ImageIterConfig& config() const { return config_; }

 private:
  struct Item {
    uint64_t key = 0;
    uint64_t offset = 0;        // in the .rec file
    std::string path;           // an image file (list without a .rec)
    std::vector<float> labels;  // from the list; empty: from the record header
  };
  struct Slot {
    size_t item;    // index into items_
    uint64_t seed;  // the image's random stream
  };
  struct Planned {
    std::vector<Slot> slots;
    int pad = 0;
  };
  struct Ready {
    Batch batch;
    bool end = false;
    std::exception_ptr error;
  };

  void load_items();
  void start_epoch(bool keep_carry);
  void stop_producer();
  void producer_loop();
  void helper_loop(int index);
  void produce_epoch(uint64_t generation);
  struct Records {
    std::vector<std::string> bytes;  // one per slot
    std::exception_ptr error;        // a read that failed: the batch reports it
  };
  void read_records(const Planned& plan, Records& out);
  void make_batch(const Planned& plan, const Records& records, const Planned* next,
                  Records& next_records, Batch& out);
  void process_image(size_t slot_index);
  std::vector<Planned> plan_epoch();

  ImageIterConfig config_;
  Augmenter augmenter_;
  std::vector<Item> items_;
  std::vector<size_t> order_;  // this part's items, in this epoch's order
  uint64_t epoch_ = 0;
  std::vector<Slot> carry_;  // roll_over: the partial batch kept for the next epoch
  std::vector<Slot> next_carry_;

  // Producer <-> consumer.
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Ready> queue_;
  uint64_t generation_ = 0;  // bumped by reset: the producer drops an older epoch's work
  bool epoch_pending_ = false;
  bool producing_ = false;
  bool shutdown_ = false;
  bool ended_ = false;  // the consumer saw the end of this epoch
  std::vector<Planned> plans_;
  std::thread producer_;
  std::unique_ptr<RecordReader> reader_;  // the producer's

  // The batch being built, shared with the helper threads.
  struct Work;
  std::unique_ptr<Work> work_;
  std::vector<std::thread> helpers_;
};

}  // namespace nanomx::io
