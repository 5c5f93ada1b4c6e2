// access.h - who last wrote each byte of a buffer and who read it since:
// the conflicts that dependency inference orders (instance.cpp) and that
// the race check proves ordered (verify.cpp).
//
// Segments are disjoint byte ranges over the bytes ever touched; each
// holds its last writers and the readers since.  Outside `parallel` there
// is one last writer: a write replaces the writers and clears the readers.
#pragma once

#include <cstdint>
#include <map>
#include <memory_resource>
#include <vector>

namespace cad {

// A list of operation ids, two of them kept inline: a segment usually has
// one writer and a reader or two.
class Ids {
 public:
  Ids() = default;
  explicit Ids(uint32_t x) { push_back(x); }
  void push_back(uint32_t x) {
    if (n_ < kInline) in_[n_] = x;
    else more_.push_back(x);
    n_++;
  }
  uint32_t size() const { return n_; }
  uint32_t operator[](uint32_t i) const { return i < kInline ? in_[i] : more_[i - kInline]; }
  void swap(Ids &o) {
    std::swap(n_, o.n_);
    std::swap(in_, o.in_);
    more_.swap(o.more_);
  }

 private:
  static constexpr uint32_t kInline = 2;
  uint32_t n_ = 0;
  uint32_t in_[kInline] = {0, 0};
  std::vector<uint32_t> more_;
};

class AccessMap {
 public:
  // Segments come from pool, which must outlive the map: one pool per
  // rank program, released at once.
  explicit AccessMap(std::pmr::memory_resource *pool) : map_(pool) {}

  // Adds to preds what op (in parallel group g, 0 = none) conflicts with
  // when it reads or writes [off, off + len): the last writers and, for a
  // write, the readers since, except those of its own group (g != 0); then
  // records the access.  Operations of one group are not ordered among
  // themselves: a group's writers and readers stay until someone outside
  // the group writes.  group_of[x] is x's group (read only when g != 0).
  void access(uint64_t off, uint64_t len, bool write, uint32_t op, uint32_t g,
              const std::vector<uint32_t> &group_of, std::vector<uint32_t> *preds);

 private:
  struct Seg {
    uint64_t end;
    Ids writers, readers;
  };
  using Map = std::pmr::map<uint64_t, Seg>;

  // Cuts the segment at it in two at x (inside it); the right part.
  Map::iterator cut(Map::iterator it, uint64_t x);

  Map map_;
};

}  // namespace cad
