// access.cpp - see access.h.
#include "access.h"

#include <algorithm>
#include <iterator>

namespace cad {

void AccessMap::access(uint64_t off, uint64_t len, bool write, uint32_t op, uint32_t g,
                       const std::vector<uint32_t> &group_of, std::vector<uint32_t> *preds) {
  if (!len) return;
  const uint64_t end = off + len;
  // The first segment that ends after off, cut at off if it starts before.
  auto it = map_.upper_bound(off);
  if (it != map_.begin() && std::prev(it)->second.end > off) {
    --it;
    if (it->first < off) it = cut(it, off);
  }
  const auto other = [&](uint32_t x) { return g == 0 || group_of[x] != g; };
  for (uint64_t at = off; at < end; ++it) {
    if (it == map_.end() || it->first > at)  // untouched bytes: an empty segment
      it = map_.emplace_hint(it, at, Seg{it == map_.end() ? end : std::min(end, it->first), {}, {}});
    else if (it->second.end > end)
      cut(it, end);
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

AccessMap::Map::iterator AccessMap::cut(Map::iterator it, uint64_t x) {
  Seg right = it->second;
  it->second.end = x;
  return map_.emplace_hint(std::next(it), x, std::move(right));
}

}  // namespace cad
