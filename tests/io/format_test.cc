// RecordIO, IRHeader, .idx and .lst at the byte level, and their errors on corrupt input.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <string>

#include "io/image.h"
#include "io/image_record.h"
#include "io/recordio.h"
#include "nanomx/error.h"

namespace io = nanomx::io;
namespace fs = std::filesystem;

namespace {

std::string temp_path(const std::string& name) {
  return (fs::temp_directory_path() / ("nanomx_io_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void put_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

const std::string kMagic("\x0A\x23\xD7\xCE", 4);

std::string word(uint32_t v) {
  std::string s(4, '\0');
  std::memcpy(s.data(), &v, 4);
  return s;
}

std::string expect_error(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const nanomx::Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

}  // namespace

TEST(RecordIO, WriterSplitsAtAlignedMagicAndReaderJoins) {
  const std::string path = temp_path("split.rec");
  const std::string record = "abcd" + kMagic + "ef" + kMagic;  // the second magic is unaligned
  {
    io::RecordWriter w(path);
    w.write(record);
    EXPECT_EQ(w.tell(), 8u + 4 + 8 + 8);  // part 1: "abcd"; part 3: "ef"+magic (6, padded to 8)
    w.close();
  }
  const std::string expected = kMagic + word(1u << 29 | 4) + "abcd" + kMagic + word(3u << 29 | 6) +
                               "ef" + kMagic + std::string(2, '\0');
  EXPECT_EQ(file_bytes(path), expected);
  io::RecordReader r(path);
  std::string out;
  ASSERT_TRUE(r.read(out));
  EXPECT_EQ(out, record);
  EXPECT_FALSE(r.read(out));
  fs::remove(path);
}

TEST(RecordIO, CorruptFilesNameFileAndOffset) {
  const std::string path = temp_path("bad.rec");
  put_file(path, kMagic + word(4) + "abcd" + "XXXX" + word(4) + "abcd");
  io::RecordReader r(path);
  std::string out;
  ASSERT_TRUE(r.read(out));
  std::string msg = expect_error([&] { r.read(out); });
  EXPECT_NE(msg.find("bad magic word"), std::string::npos) << msg;
  EXPECT_NE(msg.find("byte offset 12"), std::string::npos) << msg;
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_FALSE(r.read(out));  // the reader moved past the bad bytes: no endless loop

  // A length beyond the file is refused before any allocation.
  put_file(path, kMagic + word((1u << 29) - 1) + "ab");
  io::RecordReader huge(path);
  msg = expect_error([&] { huge.read(out); });
  EXPECT_NE(msg.find("only 2 bytes are left"), std::string::npos) << msg;
  EXPECT_LT(out.capacity(), 1024u);

  put_file(path, kMagic + word(1u << 29 | 4) + "abcd");  // first part without the rest
  io::RecordReader cut(path);
  msg = expect_error([&] { cut.read(out); });
  EXPECT_NE(msg.find("continued part"), std::string::npos) << msg;
  fs::remove(path);
}

TEST(RecordIO, SkipFindsRecordStarts) {
  const std::string path = temp_path("skip.rec");
  {
    io::RecordWriter w(path);
    w.write("one");
    w.write(kMagic + kMagic);
    w.write("three");
  }
  io::RecordReader r(path);
  std::vector<uint64_t> starts;
  for (uint64_t at = r.tell(); r.skip(); at = r.tell()) starts.push_back(at);
  EXPECT_EQ(starts, (std::vector<uint64_t>{0, 12, 36}));
  r.seek(36);
  std::string out;
  ASSERT_TRUE(r.read(out));
  EXPECT_EQ(out, "three");
  fs::remove(path);
}

TEST(ImageRecord, HeaderLayout) {
  const std::string packed =
      io::pack_image_record({0, 0, 7, 0}, {1.5f, 2.5f}, "IMG", /*multi_label=*/true);
  ASSERT_EQ(packed.size(), 24u + 8 + 3);
  uint32_t flag;
  std::memcpy(&flag, packed.data(), 4);
  EXPECT_EQ(flag, 2u);
  const io::ImageRecord r = io::unpack_image_record(packed, "test");
  EXPECT_EQ(r.header.id, 7u);
  EXPECT_EQ(r.labels, (std::vector<float>{1.5f, 2.5f}));
  EXPECT_EQ(r.image, "IMG");
  const std::string msg = expect_error([] { io::unpack_image_record("short", "rec 3"); });
  EXPECT_NE(msg.find("rec 3"), std::string::npos);
}

TEST(ImageRecord, ListAndIndexErrorsNameTheLine) {
  auto list = io::parse_list("1\t2.5\ta.jpg\n\n2\t1\t2\tb c.png\n", "'x.lst'");
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[1].labels, (std::vector<float>{1, 2}));
  EXPECT_EQ(list[1].path, "b c.png");
  EXPECT_EQ(io::format_list_line(list[0]), "1\t2.500000\ta.jpg\n");
  std::string msg = expect_error([] { io::parse_list("1\ta.jpg\n", "'x.lst'"); });
  EXPECT_NE(msg.find("'x.lst' line 1"), std::string::npos) << msg;
  msg = expect_error([] { io::parse_list("0\t1\ta\nq\tz\tb\n", "'x.lst'"); });
  EXPECT_NE(msg.find("line 2"), std::string::npos) << msg;
  const std::string idx = temp_path("i.idx");
  put_file(idx, "0\t0\n1\t16\n2\t4000\n");
  msg = expect_error([&] { io::read_index(idx, 100); });
  EXPECT_NE(msg.find("line 3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("beyond the record file"), std::string::npos) << msg;
  EXPECT_EQ(io::read_index(idx, 5000).size(), 3u);
  fs::remove(idx);
}

TEST(Image, PeekSizeOfJpegAndPng) {
  cv::Mat m(37, 53, CV_8UC3, cv::Scalar(10, 20, 30));
  for (const char* ext : {".jpg", ".png"}) {
    const std::string bytes = io::encode_image(m, ext, ext[1] == 'j' ? 90 : 3);
    int w = 0, h = 0;
    ASSERT_TRUE(io::peek_image_size(bytes, w, h)) << ext;
    EXPECT_EQ(w, 53);
    EXPECT_EQ(h, 37);
    EXPECT_FALSE(io::peek_image_size(bytes.substr(0, 10), w, h));
  }
  const std::string jpeg =
      io::encode_image(cv::Mat(64, 96, CV_8UC3, cv::Scalar(1, 2, 3)), ".jpg", 90);
  const cv::Mat reduced = io::decode_image(jpeg, 1, true, 4, "test");
  EXPECT_EQ(reduced.cols, 24);
  EXPECT_EQ(reduced.rows, 16);
  const std::string msg = expect_error([] { io::decode_image("nope", 1, true, 1, "rec 9"); });
  EXPECT_NE(msg.find("rec 9"), std::string::npos);
}

TEST(Image, ReducedDecodeOnlyWhenTheCropAllows) {
  io::AugmentConfig c;
  c.out_w = c.out_h = 32;
  std::mt19937_64 rng(1);
  io::CropPlan plan;
  // A centre crop is taken at 1:1: nothing to gain from a smaller decode.
  EXPECT_EQ(io::Augmenter(c).plan(1000, 800, rng, plan), 1);
  // resize=100 first: the short side 800 decoded at 1/8 is still 100 pixels.
  c.resize = 100;
  EXPECT_EQ(io::Augmenter(c).plan(1000, 800, rng, plan), 8);
  EXPECT_EQ(plan.base_w, 125);
  EXPECT_EQ(plan.base_h, 100);
  c.resize = 40;
  EXPECT_EQ(io::Augmenter(c).plan(100, 80, rng, plan), 2);
  EXPECT_EQ(io::Augmenter(c).plan(40, 40, rng, plan), 1);
  // A random sized crop of at least 256 pixels a side can be decoded at 1/8.
  c.resize = 0;
  c.crop = io::AugmentConfig::Crop::kRandomSized;
  c.min_area = 0.3f;
  c.max_area = 0.5f;
  int reduced = 0;
  for (int i = 0; i < 20; ++i) {
    const int r = io::Augmenter(c).plan(4000, 3000, rng, plan);
    EXPECT_LE(32 * r, std::min(plan.w, plan.h));
    reduced += r == 8;
  }
  EXPECT_EQ(reduced, 20);
  c.reduced_decode = false;
  EXPECT_EQ(io::Augmenter(c).plan(4000, 3000, rng, plan), 1);
}

TEST(Image, JpegDecodeMatchesImdecode) {
  cv::Mat m(61, 83, CV_8UC3);
  cv::randu(m, 0, 255);
  const std::string jpeg = io::encode_image(m, ".jpg", 90);
  const cv::Mat buf(1, static_cast<int>(jpeg.size()), CV_8U, const_cast<char*>(jpeg.data()));
  const auto same = [](const cv::Mat& a, const cv::Mat& b) {
    return a.size() == b.size() && a.type() == b.type() && cv::norm(a, b, cv::NORM_INF) == 0;
  };
  EXPECT_TRUE(same(io::decode_image(jpeg, 1, false, 1, "t"), cv::imdecode(buf, cv::IMREAD_COLOR)));
  EXPECT_TRUE(
      same(io::decode_image(jpeg, 0, false, 1, "t"), cv::imdecode(buf, cv::IMREAD_GRAYSCALE)));
  EXPECT_TRUE(same(io::decode_image(jpeg, 1, false, 2, "t"),
                   cv::imdecode(buf, cv::IMREAD_REDUCED_COLOR_2)));
  cv::Mat rgb;
  cv::cvtColor(cv::imdecode(buf, cv::IMREAD_COLOR), rgb, cv::COLOR_BGR2RGB);
  EXPECT_TRUE(same(io::decode_image(jpeg, 1, true, 1, "t"), rgb));
  // A damaged JPEG: libjpeg's refusal falls back to imdecode, whose refusal is the error.
  const std::string msg =
      expect_error([&] { io::decode_image(jpeg.substr(0, 40), 1, true, 1, "rec 1"); });
  EXPECT_NE(msg.find("rec 1"), std::string::npos) << msg;
}

// decode_image's max_rows: a JPEG stops after that many rows, which are the top of the full
// decode at every scale; other formats, and a bound past the bottom, give the whole image.
TEST(Image, PartialJpegDecodeIsTheTopOfTheFullOne) {
  cv::Mat m(97, 75, CV_8UC3);
  cv::randu(m, 0, 255);
  const std::string jpeg = io::encode_image(m, ".jpg", 90);
  for (int reduce : {1, 2, 4, 8}) {
    for (int flag : {0, 1}) {
      const cv::Mat full = io::decode_image(jpeg, flag, false, reduce, "t");
      for (int rows : {1, 7, 8, 9, 17, full.rows - 1}) {
        if (rows < 1 || rows > full.rows) continue;
        const cv::Mat top = io::decode_image(jpeg, flag, false, reduce, "t", rows);
        ASSERT_EQ(top.rows, rows) << reduce << " " << flag;
        ASSERT_EQ(top.cols, full.cols);
        EXPECT_EQ(cv::norm(top, full.rowRange(0, rows), cv::NORM_INF), 0)
            << "reduce " << reduce << ", flag " << flag << ", rows " << rows;
      }
      EXPECT_EQ(io::decode_image(jpeg, flag, false, reduce, "t", full.rows + 5).rows, full.rows);
    }
  }
  const std::string png = io::encode_image(m, ".png", 3);
  EXPECT_EQ(io::decode_image(png, 1, false, 1, "t", 10).rows, 97);
}

TEST(Image, ExifOrientationGoesThroughImdecode) {
  cv::Mat m(8, 16, CV_8UC3);
  cv::randu(m, 0, 255);
  const std::string jpeg = io::encode_image(m, ".jpg", 95);
  // An APP1 Exif block (little-endian TIFF, IFD0 with one entry: orientation) after SOI.
  const auto exif = [&](uint16_t orientation) {
    std::string tiff("II*\0\x08\0\0\0", 8);
    tiff += std::string("\x01\0", 2);                    // one entry
    tiff += std::string("\x12\x01\x03\0\x01\0\0\0", 8);  // tag 0x0112, SHORT, count 1
    tiff += static_cast<char>(orientation);
    tiff += std::string(3, '\0');
    tiff += std::string(4, '\0');  // no next IFD
    std::string app1 = "Exif" + std::string(2, '\0') + tiff;
    const size_t len = app1.size() + 2;
    std::string segment = "\xFF\xE1";
    segment += static_cast<char>(len >> 8);
    segment += static_cast<char>(len & 0xFF);
    return jpeg.substr(0, 2) + segment + app1 + jpeg.substr(2);
  };
  const cv::Mat plain = io::decode_image(exif(1), 1, false, 1, "t");
  EXPECT_EQ(plain.cols, 16);
  const std::string rotated = exif(6);  // 90° clockwise: imdecode swaps width and height
  const cv::Mat buf(1, static_cast<int>(rotated.size()), CV_8U, const_cast<char*>(rotated.data()));
  const cv::Mat expected = cv::imdecode(buf, cv::IMREAD_COLOR);
  const cv::Mat got = io::decode_image(rotated, 1, false, 1, "t");
  EXPECT_EQ(expected.cols, 8);  // imdecode did rotate: the block is well-formed
  EXPECT_EQ(got.cols, expected.cols);
  EXPECT_EQ(got.rows, expected.rows);
  EXPECT_EQ(cv::norm(got, expected, cv::NORM_INF), 0);
}
