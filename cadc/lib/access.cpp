// access.cpp - see access.h.
#include "access.h"

#include <algorithm>
#include <iterator>

namespace cad {

AccessMap::Map::iterator AccessMap::split(uint64_t x) {
  auto it = map_.upper_bound(x);
  if (it == map_.begin()) return it;
  auto prev = std::prev(it);
  if (prev->first == x) return prev;
  if (x >= prev->second.end) return it;
  Seg right = prev->second;
  prev->second.end = x;
  return map_.emplace_hint(it, x, std::move(right));
}

void AccessMap::access(uint64_t off, uint64_t len, bool write, uint32_t op, uint32_t g,
                       const std::vector<uint32_t> &group_of, std::vector<uint32_t> *preds) {
  if (!len) return;
  const uint64_t end = off + len;
  auto it = split(off);
  split(end);
  const auto other = [&](uint32_t x) { return g == 0 || group_of[x] != g; };
  for (uint64_t at = off; at < end; ++it) {
    if (it == map_.end() || it->first > at)  // untouched bytes: an empty segment
      it = map_.emplace_hint(it, at, Seg{it == map_.end() ? end : std::min(end, it->first), {}, {}});
    Seg &s = it->second;
    at = s.end;
    for (uint32_t i = 0; i < s.writers.size(); i++)
      if (other(s.writers[i])) preds->push_back(s.writers[i]);
    if (!write) {
      s.readers.push_back(op);
      continue;
    }
    for (uint32_t i = 0; i < s.readers.size(); i++)
      if (other(s.readers[i])) preds->push_back(s.readers[i]);
    Ids writers(op), readers;
    for (uint32_t i = 0; i < s.writers.size(); i++)
      if (!other(s.writers[i])) writers.push_back(s.writers[i]);
    for (uint32_t i = 0; i < s.readers.size(); i++)
      if (!other(s.readers[i])) readers.push_back(s.readers[i]);
    s.writers.swap(writers);
    s.readers.swap(readers);
  }
}

}  // namespace cad
