// verdicts.cpp - the rules of verdicts.h.
#include "verdicts.h"

#include <algorithm>

namespace cadrt {

uint64_t lanes_limit(const int64_t lane[kLaneProbes], const int64_t read[kLaneProbes], bool ok) {
  uint64_t upto = UINT64_MAX;
  for (int i = kLaneProbes - 1; i >= 0; i--) {
    if (ok && lane[i] != kNotMeasured && lane[i] < read[i]) break;
    upto = i ? kLaneProbe[i] : 0;
  }
  return upto;
}

uint64_t node_lanes_limit(const std::vector<uint64_t> &words, bool *any) {
  uint64_t upto = UINT64_MAX;
  *any = false;
  for (uint64_t v : words) {
    if (!v) continue;
    *any = true;
    upto = std::min(upto, v == UINT64_MAX ? v : v - 1);
  }
  return upto;
}

uint32_t push_wins(const int64_t push[kPushClasses], const int64_t read[kPushClasses]) {
  uint32_t mask = 0x100;
  for (int i = 0; i < kPushClasses; i++)
    if (push[i] != kNotMeasured && read[i] != kNotMeasured && push[i] * 10 < read[i] * 11) mask |= 1u << i;
  return mask;
}

}  // namespace cadrt
