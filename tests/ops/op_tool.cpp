// op_tool.cpp - the user-space side of the operator tests (test_ops.py):
//   op_tool gen   OPS.cadop NAME N SEED IN INOUT   random elements, biased to
//                 special values of each field's kind (NaN, +-inf, +-0,
//                 denormals, INT_MIN, -1, wrap-around edges)
//   op_tool vm    OPS.cadop NAME IN INOUT OUT      inout = in op inout with the
//                 core's interpreter (what cadrt runs in user space)
//   op_tool vmself OPS.cadop NAME INOUT OUT     the same with in == inout (one
//                 buffer: a reduction of a range into itself)
//   op_tool image OPS.cadop NAME N OUT             a one-rank program that
//                 reduces buffer 0 into buffer 1 (N elements), for cad.ko
// Exit 0, or 2 with a message.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "cad_core.h"
#include "userop.h"

namespace {

[[noreturn]] void die(const std::string &m) {
  std::cerr << "op_tool: " << m << "\n";
  std::exit(2);
}

std::string slurp(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) die("cannot read " + path);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

void spit(const std::string &path, const void *data, size_t n) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(static_cast<const char *>(data), static_cast<std::streamsize>(n));
  if (!f) die("cannot write " + path);
}

cad::UserOp find(const std::string &file, const std::string &name) {
  std::vector<cad::UserOp> ops;
  std::string error;
  if (!cad::read_cadop(slurp(file), &ops, &error)) die(file + ": " + error);
  for (cad::UserOp &op : ops)
    if (op.name == name) return op;
  die(file + " has no operator " + name);
}

template <typename T>
void put(uint8_t *p, T v) {
  std::memcpy(p, &v, sizeof(T));
}

// One field value: a special value of its kind most of the time.
void field(std::mt19937_64 &rng, const std::string &kind, uint8_t *p) {
  const uint64_t r = rng();
  const unsigned pick = static_cast<unsigned>(rng() % 24);
  if (kind == "f64") {
    const double s[] = {NAN, -NAN, INFINITY, -INFINITY, 0.0, -0.0, 4.9e-324, -4.9e-324, 2.2250738585072009e-308,
                        2.2250738585072014e-308, 1.7976931348623157e308, -1.7976931348623157e308, 1.0, -1.0, 0.5, 3.0};
    double v;
    if (pick < 16) v = s[pick];
    else if (pick < 20) v = static_cast<double>(static_cast<int64_t>(r % 2001) - 1000) / 8;
    else std::memcpy(&v, &r, 8);
    put(p, v);
  } else if (kind == "f32") {
    const float s[] = {NAN, -NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1.4e-45f, -1.4e-45f, 1.1754942e-38f,
                       1.17549435e-38f, 3.4028235e38f, -3.4028235e38f, 1.0f, -1.0f, 0.5f, 3.0f};
    float v;
    if (pick < 16) v = s[pick];
    else if (pick < 20) v = static_cast<float>(static_cast<int64_t>(r % 2001) - 1000) / 8;
    else {
      const uint32_t w = static_cast<uint32_t>(r);
      std::memcpy(&v, &w, 4);
    }
    put(p, v);
  } else if (kind == "bool") {
    put<uint8_t>(p, r & 1);
  } else {
    const unsigned bytes = kind == "i8" || kind == "u8" ? 1 : kind == "i16" || kind == "u16" ? 2 : kind == "i32" || kind == "u32" ? 4 : 8;
    const unsigned bits = 8 * bytes;
    const uint64_t mask = bits == 64 ? ~0ull : (1ull << bits) - 1;
    const uint64_t min = 1ull << (bits - 1), max = min - 1;
    const uint64_t s[] = {0, 1, mask /* -1 */, min, max, min + 1, max - 1, 2, mask - 1, 7, mask - 6, 31, 32, 63, 64, 1000};
    const uint64_t v = (pick < 16 ? s[pick] : pick < 20 ? (r % 64) : r) & mask;
    std::memcpy(p, &v, bytes);  // little-endian
  }
}

uint32_t width(const std::string &kind) {
  if (kind == "f64" || kind == "i64" || kind == "u64") return 8;
  if (kind == "f32" || kind == "i32" || kind == "u32") return 4;
  if (kind == "i16" || kind == "u16") return 2;
  return 1;
}

}  // namespace

int main(int argc, char **argv) {
  std::vector<std::string> a(argv + 1, argv + argc);
  if (a.size() == 7 && a[0] == "gen") {
    const cad::UserOp op = find(a[1], a[2]);
    const uint64_t n = std::stoull(a[3]);
    std::mt19937_64 rng(std::stoull(a[4]));
    for (int which = 0; which < 2; which++) {
      std::vector<uint8_t> buf(n * op.elem_size, 0);
      for (uint64_t i = 0; i < n; i++)
        for (const auto &[off, kind] : op.fields) {
          if (off + width(kind) > op.elem_size) die("a field outside the element");
          field(rng, kind, &buf[i * op.elem_size + off]);
        }
      spit(a[5 + which], buf.data(), buf.size());
    }
    return 0;
  }
  if (a.size() == 6 && a[0] == "vm") {
    const cad::UserOp op = find(a[1], a[2]);
    std::string in = slurp(a[3]), io = slurp(a[4]);
    if (in.size() != io.size() || in.size() % op.elem_size) die("in and inout must be the same whole number of elements");
    cad::userop_apply(op, io.data(), in.data(), io.size() / op.elem_size);
    spit(a[5], io.data(), io.size());
    return 0;
  }
  if (a.size() == 5 && a[0] == "vmself") {
    const cad::UserOp op = find(a[1], a[2]);
    std::string io = slurp(a[3]);
    if (io.size() % op.elem_size) die("inout must be a whole number of elements");
    cad::userop_apply(op, io.data(), io.data(), io.size() / op.elem_size);
    spit(a[4], io.data(), io.size());
    return 0;
  }
  if (a.size() == 5 && a[0] == "image") {
    const cad::UserOp op = find(a[1], a[2]);
    const uint64_t n = std::stoull(a[3]);
    std::vector<uint64_t> image;
    std::string error;
    if (!cad::userop_image(op, n * op.elem_size, &image, &error)) die(error);
    spit(a[4], image.data(), image.size() * 8);
    return 0;
  }
  die("usage: op_tool gen|vm|vmself|image ... (see the source)");
}
