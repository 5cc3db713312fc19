// The payload of an image record (MXNet's IRHeader: flag, label, id, id2, then `flag` float32
// labels when flag > 0, then the image bytes), the .idx index file (`key\toffset` lines) and the
// .lst image list (`index\tlabel...\tpath` lines). docs/io.md describes the three formats.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace nanomx::io {

constexpr size_t kImageHeaderBytes = 24;  // struct 'IfQQ': uint32, float32, uint64, uint64

struct ImageRecordHeader {
  uint32_t flag = 0;  // 0: one label in `label`; k > 0: k labels follow the header
  float label = 0;
  uint64_t id = 0;
  uint64_t id2 = 0;
};

struct ImageRecord {
  ImageRecordHeader header;
  std::vector<float> labels;  // `flag` labels, or the single label when flag == 0
  std::string_view image;     // the image bytes (a view into the record)
};

// Header + (labels when labels.size() != 1 or force_multi) + image. One label packs as flag 0.
std::string pack_image_record(const ImageRecordHeader& header, const std::vector<float>& labels,
                              std::string_view image, bool multi_label);
// Throws naming `where` when the record is shorter than its header says.
ImageRecord unpack_image_record(std::string_view record, std::string_view where);

struct IndexEntry {
  uint64_t key;
  uint64_t offset;
};
// Reads an .idx file; each offset must be below `rec_size` (the .rec file's size). Errors name
// the file and the line.
std::vector<IndexEntry> read_index(const std::string& path, uint64_t rec_size);

struct ListEntry {
  uint64_t index;
  std::vector<float> labels;
  std::string path;
};
// Reads a .lst file: `index \t label [\t label ...] \t path`. A malformed line is an error naming
// the file and the line number.
std::vector<ListEntry> read_list(const std::string& path);
// The same from the text of a list; `source` names it in errors.
std::vector<ListEntry> parse_list(std::string_view text, const std::string& source);
// One line, labels written as %f (MXNet 1.9.1's im2rec) and a trailing newline.
std::string format_list_line(const ListEntry& entry);

}  // namespace nanomx::io
