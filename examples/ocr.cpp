// Text in a picture, read by PaddleOCR's models run through tinyt, as rapidocr reads it.
//
//   ocr det.onnx cls.onnx rec.onnx picture.png [--runs N]
//
// The three models are rapidocr_onnxruntime's: ch_PP-OCRv4_det_infer.onnx finds the text,
// ch_ppocr_mobile_v2.0_cls_infer.onnx tells a line turned upside down, ch_PP-OCRv4_rec_infer.onnx
// reads a line (its dictionary is its metadata "character", one symbol a line). With rapidocr's
// defaults:
//   detection: the picture's short side scaled up to 736 (sides then multiples of 32), the map
//     thresholded at 0.3 and dilated; each blob's minimum-area rectangle is kept when the map's
//     mean in it is at least 0.5, and grown by area * 1.6 / perimeter on every side (DB's
//     "unclip");
//   direction: each box, cut out upright, 48 px high in a 48x192 frame, is turned half-way round
//     when the classifier says "180" with a probability over 0.9;
//   recognition: 48 px high and at least 320 wide, decoded greedily (CTC, blank 0); a line read
//     with a mean probability under 0.5 is dropped.
// Prints a line per box, "x0,y0 x1,y1 x2,y2 x3,y3 score text" (corners clockwise from the top
// left), then an empty line and the text (boxes on one line joined by a space). The time of each
// stage goes to stderr; --runs N reads the picture N times (the first run compiles the kernels).
//
// The PNG may be grey, RGB or a palette, with or without alpha (put on white), of any bit depth,
// not interlaced; zlib (libz.so.1) inflates it.
#include <tinyt/backend/dlopen.hpp>
#include <tinyt/onnx.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <numeric>
#include <string>
#include <vector>

using namespace tinyt;

namespace {

// ------------------------------------------------------------------------------------ pictures

// A picture as PaddleOCR takes it: blue, green, red (OpenCV's order, which it was trained on),
// 0..255, a pixel's channels side by side, rows top to bottom.
struct Image {
  int64_t width = 0, height = 0;
  std::vector<float> bgr;

  Image(int64_t w, int64_t h) : width(w), height(h), bgr(static_cast<size_t>(w * h * 3), 0.0f) {}
  float& at(int64_t x, int64_t y, int c) { return bgr[(y * width + x) * 3 + c]; }
  float at(int64_t x, int64_t y, int c) const { return bgr[(y * width + x) * 3 + c]; }
  double aspect() const { return double(width) / double(height); }

  // channel c at (x, y), between pixel centres, interpolated linearly; edges repeat outwards
  float sample(double x, double y, int c) const {
    const double fx = std::floor(x), fy = std::floor(y), tx = x - fx, ty = y - fy;
    const auto x0 = static_cast<int64_t>(fx), y0 = static_cast<int64_t>(fy);
    auto pixel = [&](int64_t px, int64_t py) {
      return double(
          at(std::clamp<int64_t>(px, 0, width - 1), std::clamp<int64_t>(py, 0, height - 1), c));
    };
    const double top = pixel(x0, y0) * (1 - tx) + pixel(x0 + 1, y0) * tx;
    const double bottom = pixel(x0, y0 + 1) * (1 - tx) + pixel(x0 + 1, y0 + 1) * tx;
    return static_cast<float>(top * (1 - ty) + bottom * ty);
  }
};

// `img` scaled to w x h, bilinear with the pixel centres aligned (cv2.resize's INTER_LINEAR)
Image resize(const Image& img, int64_t w, int64_t h) {
  Image out(w, h);
  const double sx = double(img.width) / double(w), sy = double(img.height) / double(h);
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c)
        out.at(x, y, c) = img.sample((double(x) + 0.5) * sx - 0.5, (double(y) + 0.5) * sy - 0.5, c);
  return out;
}

// `img` turned a quarter anticlockwise (numpy's rot90), or half-way round
Image rotate_quarter(const Image& img) {
  Image out(img.height, img.width);
  for (int64_t y = 0; y < out.height; ++y)
    for (int64_t x = 0; x < out.width; ++x)
      for (int c = 0; c < 3; ++c) out.at(x, y, c) = img.at(img.width - 1 - y, x, c);
  return out;
}
Image rotate_half(const Image& img) { return rotate_quarter(rotate_quarter(img)); }

// ----------------------------------------------------------------------------------------- PNG

uint32_t big_endian(const std::string& b, size_t at) {
  uint32_t v = 0;
  for (size_t i = 0; i < 4; ++i) v = v << 8 | static_cast<unsigned char>(b[at + i]);
  return v;
}

// zlib data inflated to exactly `size` bytes, by the system's zlib (opened as tinyt opens it
// to read gzip files)
std::string inflate(const std::string& deflated, size_t size, const std::string& path) {
  using Uncompress = int(unsigned char* dest, unsigned long* dest_len, const unsigned char* source,
                         unsigned long source_len);
  static const backend::Library zlib = backend::Library::open_first({"libz.so.1", "libz.so"});
  static Uncompress* const uncompress = zlib.symbol<Uncompress>("uncompress");
  std::string out(size, '\0');
  unsigned long got = size;
  const int status =
      uncompress(reinterpret_cast<unsigned char*>(out.data()), &got,
                 reinterpret_cast<const unsigned char*>(deflated.data()), deflated.size());
  if (status == -5)
    throw Error("ocr: " + path + ": the image data inflates to more than its size, " +
                std::to_string(size) + " bytes");
  if (status != 0)
    throw Error("ocr: " + path + ": the image data does not inflate (zlib error " +
                std::to_string(status) + ")");
  if (got != size)
    throw Error("ocr: " + path + ": the image data inflates to " + std::to_string(got) +
                " bytes, not " + std::to_string(size));
  return out;
}

int paeth(int a, int b, int c) {
  const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
  return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

// Undoes PNG's filters in place: each row is a filter byte (0-4) and `stride` bytes, each byte
// predicted from the byte a pixel (`unit` bytes, at least 1) to its left, the one above, or both.
void unfilter(std::string& rows, size_t height, size_t stride, size_t unit,
              const std::string& path) {
  auto* bytes = reinterpret_cast<uint8_t*>(rows.data());
  for (size_t y = 0; y < height; ++y) {
    const int filter = bytes[y * (stride + 1)];
    uint8_t* row = bytes + y * (stride + 1) + 1;
    const uint8_t* above = y > 0 ? row - (stride + 1) : nullptr;
    if (filter > 4)
      throw Error("ocr: " + path + ": row " + std::to_string(y) + " has filter " +
                  std::to_string(filter) + " (PNG has 0-4)");
    for (size_t i = 0; i < stride; ++i) {
      const int a = i >= unit ? row[i - unit] : 0, b = above ? above[i] : 0,
                c = above && i >= unit ? above[i - unit] : 0;
      const int predicted =
          std::array<int, 5>{0, a, b, (a + b) / 2, paeth(a, b, c)}[static_cast<size_t>(filter)];
      row[i] = static_cast<uint8_t>(row[i] + predicted);
    }
  }
}

// The pixels of a PNG file; transparent parts are put on white
Image read_png(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error("ocr: cannot read " + path);
  const std::string file((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  auto fail = [&](const std::string& what) { return Error("ocr: " + path + ": " + what); };
  if (file.compare(0, 8, std::string("\x89PNG\r\n\x1a\n", 8)) != 0) throw fail("not a PNG file");
  uint32_t width = 0, height = 0;
  int depth = 0, color = -1, interlace = 0;
  std::string image_data, palette, palette_alpha;
  for (size_t at = 8;;) {  // chunks: length, type, data, CRC (not checked)
    if (at + 12 > file.size()) throw fail("the file ends before its IEND chunk");
    const size_t length = big_endian(file, at);
    const std::string type = file.substr(at + 4, 4);
    if (length > file.size() - at - 12)
      throw fail("chunk '" + type + "' runs past the end of the file");
    const std::string data = file.substr(at + 8, length);
    if (type == "IHDR" && length == 13) {
      width = big_endian(data, 0), height = big_endian(data, 4);
      depth = static_cast<unsigned char>(data[8]), color = static_cast<unsigned char>(data[9]),
      interlace = data[12];
    } else if (type == "PLTE") {
      palette = data;
    } else if (type == "tRNS") {  // a palette's alpha (for grey or RGB: one colour, ignored)
      palette_alpha = data;
    } else if (type == "IDAT") {
      image_data += data;
    } else if (type == "IEND") {
      break;
    }
    at += 12 + length;
  }
  // colour type: channels, bit depths (grey, RGB, palette, grey and alpha, RGBA)
  static const std::map<int, std::pair<int, std::vector<int>>> formats{{0, {1, {1, 2, 4, 8, 16}}},
                                                                       {2, {3, {8, 16}}},
                                                                       {3, {1, {1, 2, 4, 8}}},
                                                                       {4, {2, {8, 16}}},
                                                                       {6, {4, {8, 16}}}};
  const auto format = formats.find(color);
  if (color < 0) throw fail("no IHDR chunk");
  if (format == formats.end() || std::ranges::count(format->second.second, depth) == 0)
    throw fail("colour type " + std::to_string(color) + " at bit depth " + std::to_string(depth) +
               " is not a PNG format");
  if (interlace != 0) throw fail("it is interlaced (Adam7), which ocr does not read");
  if (width == 0 || height == 0 || uint64_t{width} * height > (uint64_t{1} << 28))
    throw fail("a size of " + std::to_string(width) + "x" + std::to_string(height) +
               " pixels is not read");
  const int channels = format->second.first;
  const size_t bits = channels * depth, stride = (width * bits + 7) / 8;
  std::string rows = inflate(image_data, height * (stride + 1), path);
  unfilter(rows, height, stride, std::max<size_t>(1, bits / 8), path);

  // sample i of a row: the high byte of a 16-bit sample, the bit field of a 1-, 2- or 4-bit one
  auto sample = [&](const uint8_t* row, size_t i) -> int {
    if (depth >= 8) return row[i * depth / 8];
    const size_t bit = i * depth;
    return row[bit / 8] >> (8 - depth - bit % 8) & ((1 << depth) - 1);
  };
  const int grey_scale = depth < 8 ? 255 / ((1 << depth) - 1) : 1;  // 1, 2 and 4 bits to 0..255
  Image img(width, height);
  for (size_t y = 0; y < height; ++y) {
    const auto* row = reinterpret_cast<const uint8_t*>(rows.data()) + y * (stride + 1) + 1;
    for (size_t x = 0; x < width; ++x) {
      const size_t s = x * channels;
      std::array<int, 4> rgba{};
      if (color == 0 || color == 4) {
        const int grey = sample(row, s) * grey_scale;
        rgba = {grey, grey, grey, color == 4 ? sample(row, s + 1) : 255};
      } else if (color == 3) {
        const auto index = static_cast<size_t>(sample(row, s));
        if (3 * index + 2 >= palette.size())
          throw fail("palette index " + std::to_string(index) + " is past its PLTE chunk");
        auto byte = [](const std::string& b, size_t i) {
          return int(static_cast<unsigned char>(b[i]));
        };
        const int alpha = index < palette_alpha.size() ? byte(palette_alpha, index) : 255;
        rgba = {byte(palette, 3 * index), byte(palette, 3 * index + 1),
                byte(palette, 3 * index + 2), alpha};
      } else {
        rgba = {sample(row, s), sample(row, s + 1), sample(row, s + 2),
                color == 6 ? sample(row, s + 3) : 255};
      }
      for (int c = 0; c < 3; ++c)  // blue first
        img.at(x, y, c) = float(rgba[2 - c] * rgba[3] + 255 * (255 - rgba[3])) / 255.0f;
    }
  }
  return img;
}

// ------------------------------------------------------------------------------------ geometry

struct Point {
  double x, y;
};
Point operator+(Point a, Point b) { return {a.x + b.x, a.y + b.y}; }
Point operator-(Point a, Point b) { return {a.x - b.x, a.y - b.y}; }
Point operator*(double s, Point a) { return {s * a.x, s * a.y}; }
double cross(Point o, Point a, Point b) {
  return (a.x - o.x) * (b.y - o.y) - (a.y - o.y) * (b.x - o.x);
}
double distance(Point a, Point b) { return std::hypot(a.x - b.x, a.y - b.y); }

// a box's corners: top left, top right, bottom right, bottom left
using Quad = std::array<Point, 4>;

// The corners in a box's order, as rapidocr puts them: of the two leftmost the upper one is the top
// left, of the two rightmost the upper one is the top right.
Quad clockwise(Quad p) {
  std::ranges::sort(p, {}, &Point::x);
  if (p[0].y > p[1].y) std::swap(p[0], p[1]);
  if (p[2].y > p[3].y) std::swap(p[2], p[3]);
  return {p[0], p[2], p[3], p[1]};
}

// The convex hull of `points`, anticlockwise (Andrew's monotone chain), without collinear points
std::vector<Point> convex_hull(std::vector<Point> points) {
  std::ranges::sort(points,
                    [](Point a, Point b) { return a.x < b.x || (a.x == b.x && a.y < b.y); });
  if (points.size() < 3) return points;
  std::vector<Point> hull(2 * points.size());
  size_t k = 0;
  for (size_t i = 0; i < points.size(); ++i) {  // lower half, left to right
    while (k >= 2 && cross(hull[k - 2], hull[k - 1], points[i]) <= 0) --k;
    hull[k++] = points[i];
  }
  for (size_t i = points.size() - 1, lower = k + 1; i-- > 0;) {  // upper half, right to left
    while (k >= lower && cross(hull[k - 2], hull[k - 1], points[i]) <= 0) --k;
    hull[k++] = points[i];
  }
  hull.resize(k - 1);  // (the last point is the first again)
  return hull;
}

// A rotated rectangle: its centre, the unit vector along its length, and its two sides
struct Rect {
  Point centre, along;
  double length = 0, breadth = 0;
  Quad corners() const {
    const Point across{-along.y, along.x};
    const Point l = 0.5 * length * along, b = 0.5 * breadth * across;
    return clockwise({centre - l - b, centre + l - b, centre + l + b, centre - l + b});
  }
  double short_side() const { return std::min(length, breadth); }
};

// The smallest rectangle around a convex polygon: one of its sides lies along an edge of the
// polygon (rotating calipers, here trying every edge: a text blob's hull has few)
Rect min_area_rect(const std::vector<Point>& hull) {
  // the hull's extent along a unit vector: the least and the greatest projection
  auto extent = [&](Point d) {
    std::pair<double, double> e{INFINITY, -INFINITY};
    for (const Point p : hull)
      e = {std::min(e.first, p.x * d.x + p.y * d.y), std::max(e.second, p.x * d.x + p.y * d.y)};
    return e;
  };
  Rect best;
  for (size_t i = 0; i < hull.size(); ++i) {
    const Point edge = hull[(i + 1) % hull.size()] - hull[i];
    const Point along = (1 / std::hypot(edge.x, edge.y)) * edge, across{-along.y, along.x};
    const auto [lo_a, hi_a] = extent(along);
    const auto [lo_b, hi_b] = extent(across);
    if (i == 0 || (hi_a - lo_a) * (hi_b - lo_b) < best.length * best.breadth)
      best = {0.5 * (lo_a + hi_a) * along + 0.5 * (lo_b + hi_b) * across, along, hi_a - lo_a,
              hi_b - lo_b};
  }
  return best;
}

// The box's contents, upright, as wide and high as its longer sides: pixel (u, v) comes from the
// corners interpolated at (u / width, v / height): for a parallelogram (a box is one, to within
// rounding) the perspective map rapidocr crops with. A line standing on end is laid down.
Image crop(const Image& img, const Quad& q) {
  const auto w = int64_t(std::max(distance(q[0], q[1]), distance(q[2], q[3])));
  const auto h = int64_t(std::max(distance(q[0], q[3]), distance(q[1], q[2])));
  Image out(w, h);
  for (int64_t v = 0; v < h; ++v)
    for (int64_t u = 0; u < w; ++u) {
      const double s = double(u) / double(w), t = double(v) / double(h);
      const Point p = (1 - t) * ((1 - s) * q[0] + s * q[1]) + t * ((1 - s) * q[3] + s * q[2]);
      for (int c = 0; c < 3; ++c) out.at(u, v, c) = img.sample(p.x, p.y, c);
    }
  return double(h) >= 1.5 * double(w) ? rotate_quarter(out) : out;
}

// ----------------------------------------------------------------------------------- the models

// Pictures of one height, at most `width` wide, as a batch [n, 3, height, width]: channels first,
// scaled to [-1, 1] ((v / 255 - 0.5) / 0.5), padded on the right with 0. (Built on the host, so
// that batches of one shape run the same kernels whatever their pictures' widths.)
Tensor batch(const std::vector<Image>& images, int64_t width) {
  const auto n = int64_t(images.size());
  const int64_t height = images.at(0).height;
  std::vector<float> data(n * 3 * height * width, 0.0f);
  for (int64_t i = 0; i < n; ++i)
    for (int c = 0; c < 3; ++c)
      for (int64_t y = 0; y < height; ++y)
        for (int64_t x = 0; x < images[i].width; ++x)
          data[((i * 3 + c) * height + y) * width + x] = images[i].at(x, y, c) / 127.5f - 1.0f;
  return Tensor::from_vector(data, {n, 3, height, width});
}

struct Output {
  std::vector<float> values;
  std::vector<int64_t> shape;
};

// The model's output for one input, read back
Output infer(const onnx::Model& model, const Tensor& input) {
  const Tensor out = model.run({{model.inputs().at(0).name, input}}).at(model.outputs().at(0).name);
  return {out.to_vector<float>(), out.shape().to_vector()};
}

// `img` scaled to `height` keeping its aspect (rounded up), but at most `max_width` wide
Image to_height(const Image& img, int64_t height, int64_t max_width) {
  const auto width = int64_t(std::ceil(double(height) * img.aspect()));
  return resize(img, std::clamp<int64_t>(width, 1, max_width), height);
}

// The crops' indices by aspect ratio, in batches of 6: rapidocr batches lines of similar lengths,
// so that little of a batch is padding
std::vector<std::vector<size_t>> batches_by_aspect(const std::vector<Image>& crops) {
  std::vector<size_t> order(crops.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::ranges::stable_sort(order, {}, [&](size_t i) { return crops[i].aspect(); });
  std::vector<std::vector<size_t>> batches;
  for (size_t at = 0; at < order.size(); at += 6)
    batches.emplace_back(order.begin() + at, order.begin() + std::min(at + 6, order.size()));
  return batches;
}

// ---------------------------------------------------------------------------------- detection

// A side scaled as rapidocr scales a picture for the detector: int(side * ratio), then rounded to
// the nearest multiple of 32 (ties to even, as Python's round), at least 32
int64_t scaled_side(int64_t side, double ratio) {
  return std::max<int64_t>(
      32, int64_t(std::nearbyint(double(int64_t(double(side) * ratio)) / 32)) * 32);
}

// What the detector looks at: the picture with its long side at most 2000 px and its short side at
// least 30 (sides then multiples of 32), with black bands above and below when it is at most 30
// high or over 8 times as wide, so that a single line is not blown up to 736 px high.
struct Page {
  Image image;
  int64_t picture_width, picture_height, top = 0;  // `top`: the band above

  explicit Page(const Image& picture)
      : image(picture), picture_width(picture.width), picture_height(picture.height) {
    auto rescale = [&](double ratio) {
      image = resize(image, scaled_side(image.width, ratio), scaled_side(image.height, ratio));
    };
    if (const int64_t long_side = std::max(image.width, image.height); long_side > 2000)
      rescale(2000.0 / double(long_side));
    if (const int64_t short_side = std::min(image.width, image.height); short_side < 30)
      rescale(30.0 / double(short_side));
    if (image.height <= 30 || image.aspect() > 8) {
      top = std::abs(std::max<int64_t>(image.width / 8, 30) * 2 - image.height) / 2;
      Image banded(image.width, image.height + 2 * top);
      std::ranges::copy(image.bgr, banded.bgr.begin() + top * image.width * 3);
      image = std::move(banded);
    }
  }
  // a point of the page on the picture
  Point on_picture(Point p) const {
    const double scale_x = double(picture_width) / double(image.width);
    const double scale_y = double(picture_height) / double(image.height - 2 * top);
    return {std::clamp(p.x * scale_x, 0.0, double(picture_width)),
            std::clamp((p.y - double(top)) * scale_y, 0.0, double(picture_height))};
  }
};

// The detector's map of text, thresholded at 0.3 and dilated by a pixel up and left (a 2x2 square,
// as rapidocr's cv2.dilate)
std::vector<uint8_t> text_mask(const std::vector<float>& map, int64_t w, int64_t h) {
  auto on = [&](int64_t x, int64_t y) { return x >= 0 && y >= 0 && map[y * w + x] > 0.3f; };
  std::vector<uint8_t> mask(map.size(), 0);
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x)
      mask[y * w + x] = on(x, y) || on(x - 1, y) || on(x, y - 1) || on(x - 1, y - 1);
  return mask;
}

// The blobs of the mask (8-connected), each as its pixels' centres
std::vector<std::vector<Point>> blobs(std::vector<uint8_t> mask, int64_t w, int64_t h) {
  std::vector<std::vector<Point>> found;
  std::vector<int64_t> todo;  // pixels of the blob whose neighbours are still to be looked at
  for (int64_t start = 0; start < w * h; ++start) {
    if (!mask[start]) continue;
    std::vector<Point>& blob = found.emplace_back();
    mask[start] = 0, todo.push_back(start);
    while (!todo.empty()) {
      const int64_t x = todo.back() % w, y = todo.back() / w;
      todo.pop_back();
      blob.push_back({double(x), double(y)});
      for (int64_t ny = std::max<int64_t>(y - 1, 0); ny <= std::min(y + 1, h - 1); ++ny)
        for (int64_t nx = std::max<int64_t>(x - 1, 0); nx <= std::min(x + 1, w - 1); ++nx)
          if (mask[ny * w + nx]) mask[ny * w + nx] = 0, todo.push_back(ny * w + nx);
    }
  }
  return found;
}

// The map's mean over the box: over the pixels whose centres lie in it once its corners are cut to
// whole pixels (rapidocr's "fast" score)
double mean_inside(const std::vector<float>& map, int64_t w, int64_t h, const Quad& box) {
  Quad q;
  for (size_t i = 0; i < 4; ++i) q[i] = {std::floor(box[i].x), std::floor(box[i].y)};
  auto inside = [&](Point p) {  // on the same side of every edge, either way round
    bool left = true, right = true;
    for (size_t i = 0; i < 4; ++i) {
      const double side = cross(q[i], q[(i + 1) % 4], p);
      left = left && side >= 0, right = right && side <= 0;
    }
    return left || right;
  };
  const auto [lo_x, hi_x] = std::minmax({q[0].x, q[1].x, q[2].x, q[3].x});
  const auto [lo_y, hi_y] = std::minmax({q[0].y, q[1].y, q[2].y, q[3].y});
  double sum = 0;
  int64_t count = 0;
  for (auto y = std::max<int64_t>(0, int64_t(lo_y)); y <= std::min(h - 1, int64_t(hi_y)); ++y)
    for (auto x = std::max<int64_t>(0, int64_t(lo_x)); x <= std::min(w - 1, int64_t(hi_x)); ++x)
      if (inside({double(x), double(y)})) sum += map[y * w + x], ++count;
  return count ? sum / double(count) : 0.0;
}

// Rapidocr's reading order: by the top left corner, top to bottom; then a box less than 10 px lower
// than the one before it but left of it moves before it (one line, left to right)
void sort_for_reading(std::vector<Quad>& boxes) {
  std::ranges::sort(boxes, [](const Quad& a, const Quad& b) {
    return a[0].y < b[0].y || (a[0].y == b[0].y && a[0].x < b[0].x);
  });
  for (size_t i = 0; i + 1 < boxes.size(); ++i)
    for (size_t j = i + 1; j-- > 0;) {
      if (std::abs(boxes[j + 1][0].y - boxes[j][0].y) >= 10 || boxes[j + 1][0].x >= boxes[j][0].x)
        break;
      std::swap(boxes[j], boxes[j + 1]);
    }
}

// The text boxes of the detector's map (w x h), on the page (in whole pixels), in reading order
std::vector<Quad> boxes_in(const std::vector<float>& map, int64_t w, int64_t h, const Image& page) {
  std::vector<Quad> boxes;
  for (const std::vector<Point>& blob : blobs(text_mask(map, w, h), w, h)) {
    const std::vector<Point> hull = convex_hull(blob);
    if (hull.size() < 3) continue;  // (a line of pixels: no area)
    Rect rect = min_area_rect(hull);
    if (rect.short_side() < 3 || mean_inside(map, w, h, rect.corners()) < 0.5) continue;
    // unclip: DB finds text shrunk, so the rectangle grows on every side by area * 1.6 / perimeter
    const double grow = rect.length * rect.breadth * 1.6 / (2 * (rect.length + rect.breadth));
    rect.length += 2 * grow, rect.breadth += 2 * grow;
    if (rect.short_side() < 3 + 2) continue;
    Quad box = rect.corners();
    for (Point& p : box)
      p = {std::clamp(std::nearbyint(p.x * double(page.width) / double(w)), 0.0,
                      double(page.width - 1)),
           std::clamp(std::nearbyint(p.y * double(page.height) / double(h)), 0.0,
                      double(page.height - 1))};
    box = clockwise(box);
    if (std::floor(distance(box[0], box[1])) > 3 && std::floor(distance(box[0], box[3])) > 3)
      boxes.push_back(box);
  }
  sort_for_reading(boxes);
  return boxes;
}

// The text boxes of the page: the detector sees it with its short side scaled up to 736 px
std::vector<Quad> detect(const onnx::Model& det, const Image& page) {
  const int64_t short_side = std::min(page.width, page.height);
  const double ratio = short_side < 736 ? 736.0 / double(short_side) : 1.0;
  const int64_t w = scaled_side(page.width, ratio), h = scaled_side(page.height, ratio);
  const Output map = infer(det, batch({resize(page, w, h)}, w));  // [1, 1, h, w]
  return boxes_in(map.values, w, h, page);
}

// ------------------------------------------------------------------------ direction, recognition

// Turns the crops the classifier finds upside down ("180" over "0", with a probability over 0.9)
void turn_upright(const onnx::Model& cls, std::vector<Image>& crops) {
  for (const std::vector<size_t>& indices : batches_by_aspect(crops)) {
    std::vector<Image> frames;
    for (const size_t i : indices) frames.push_back(to_height(crops[i], 48, 192));
    const Output p = infer(cls, batch(frames, 192));  // [n, 2]: "0", "180"
    for (size_t k = 0; k < indices.size(); ++k)
      if (p.values[2 * k + 1] > p.values[2 * k] && p.values[2 * k + 1] > 0.9f)
        crops[indices[k]] = rotate_half(crops[indices[k]]);
  }
}

// The recognizer's symbols: CTC's blank, the lines of its "character" metadata, and a space (which
// rapidocr adds at the end)
std::vector<std::string> alphabet(const onnx::Model& rec, const std::string& path) {
  const auto it = rec.metadata().find("character");
  if (it == rec.metadata().end())
    throw Error("ocr: " + path + " has no 'character' metadata: it is not a PaddleOCR recognizer");
  std::vector<std::string> symbols{"<blank>"};
  for (size_t at = 0; at < it->second.size();) {
    const size_t end = std::min(it->second.find('\n', at), it->second.size());
    std::string line = it->second.substr(at, end - at);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    symbols.push_back(line), at = end + 1;
  }
  symbols.push_back(" ");
  return symbols;
}

struct Reading {
  std::string text;
  double score = 0;  // the mean probability of its symbols
};

// Greedy CTC over one line's probabilities [steps, symbols]: the likeliest symbol at each step,
// repeats merged, blanks dropped
Reading decode(const float* probabilities, int64_t steps, const std::vector<std::string>& symbols) {
  Reading read;
  size_t previous = 0;
  int64_t kept = 0;
  for (int64_t t = 0; t < steps; ++t) {
    const float* step = probabilities + t * static_cast<int64_t>(symbols.size());
    const auto best = static_cast<size_t>(std::max_element(step, step + symbols.size()) - step);
    if (best != 0 && best != previous) read.text += symbols[best], read.score += step[best], ++kept;
    previous = best;
  }
  if (kept > 0) read.score /= static_cast<double>(kept);
  return read;
}

// What each crop says: 48 px high, a batch as wide as its widest line but at least 320 px
std::vector<Reading> recognize(const onnx::Model& rec, const std::vector<std::string>& symbols,
                               const std::vector<Image>& crops) {
  std::vector<Reading> readings(crops.size());
  for (const std::vector<size_t>& indices : batches_by_aspect(crops)) {
    const auto width =
        static_cast<int64_t>(48 * std::max(320.0 / 48, crops[indices.back()].aspect()));
    std::vector<Image> lines;
    for (const size_t i : indices) lines.push_back(to_height(crops[i], 48, width));
    const Output p = infer(rec, batch(lines, width));  // [n, steps, symbols]
    if (p.shape.size() != 3 || p.shape[2] != static_cast<int64_t>(symbols.size()))
      throw Error("ocr: the recognizer gives " + std::to_string(p.shape.back()) +
                  " classes, but its dictionary has " + std::to_string(symbols.size()) +
                  " symbols");
    for (size_t k = 0; k < indices.size(); ++k)
      readings[indices[k]] = decode(
          p.values.data() + static_cast<int64_t>(k) * p.shape[1] * p.shape[2], p.shape[1], symbols);
  }
  return readings;
}

}  // namespace

int main(int argc, char** argv) try {
  int runs = 1;
  std::vector<std::string> paths;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--runs" && i + 1 < argc)
      runs = std::max(1, std::stoi(argv[++i]));
    else
      paths.emplace_back(argv[i]);
  }
  if (paths.size() != 4) {
    std::cerr << "usage: ocr det.onnx cls.onnx rec.onnx picture.png [--runs N]\n";
    return 2;
  }
  const onnx::Model det = onnx::load(paths[0]), cls = onnx::load(paths[1]),
                    rec = onnx::load(paths[2]);
  const std::vector<std::string> symbols = alphabet(rec, paths[2]);
  const Image picture = read_png(paths[3]);
  const Page page(picture);

  using clock = std::chrono::steady_clock;
  auto seconds_since = [](clock::time_point start) {
    return std::chrono::duration<double>(clock::now() - start).count();
  };
  std::vector<Quad> boxes;
  std::vector<Reading> readings;
  for (int run = 0; run < runs; ++run) {
    const auto start = clock::now();
    boxes = detect(det, page.image);
    const double det_s = seconds_since(start);
    auto stage = clock::now();
    std::vector<Image> crops;
    for (const Quad& box : boxes) crops.push_back(crop(page.image, box));
    turn_upright(cls, crops);
    const double cls_s = seconds_since(stage);
    stage = clock::now();
    readings = recognize(rec, symbols, crops);
    std::cerr << std::fixed << std::setprecision(3) << "ocr: run " << run + 1 << ": "
              << boxes.size() << " boxes; det " << det_s << " s, cls " << cls_s << " s, rec "
              << seconds_since(stage) << " s\n";
  }

  std::string text;
  double line_top = -INFINITY;  // the top of the line of text being printed
  std::cout << std::fixed << std::setprecision(3);
  for (size_t i = 0; i < boxes.size(); ++i) {
    if (readings[i].score < 0.5) continue;  // (rapidocr's text_score)
    for (const Point corner : boxes[i]) {
      const Point p = page.on_picture(corner);
      std::cout << std::lround(p.x) << "," << std::lround(p.y) << " ";
    }
    std::cout << readings[i].score << " " << readings[i].text << "\n";
    const bool same_line = std::abs(boxes[i][0].y - line_top) < 10;  // (as sort_for_reading)
    if (!text.empty()) text += same_line ? " " : "\n";
    text += readings[i].text, line_top = boxes[i][0].y;
  }
  std::cout << "\n" << text << "\n";
  return 0;
} catch (const std::exception& e) {
  std::cerr << e.what() << "\n";
  return 1;
}
