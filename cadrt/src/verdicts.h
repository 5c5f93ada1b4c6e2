// verdicts.h - the rules that turn what cadrt_init measured into the
// node's transfer decisions (lanes.cpp): pure functions of the times, so
// that a unit test states each rule and the runtime's tests only check
// that the decision made is the one its measurement gives.
#ifndef CADRT_VERDICTS_H
#define CADRT_VERDICTS_H

#include <cstdint>
#include <vector>

namespace cadrt {

// A time not measured (its trial gave up).
constexpr int64_t kNotMeasured = INT64_MAX;

// The exchange sizes lanes_upto() times, and what it records of them.
constexpr int kLaneProbes = 4;
constexpr uint64_t kLaneProbe[kLaneProbes] = {16 << 10, 64 << 10, 256 << 10, 1 << 20};

// Up to which transfer the lanes beat the single copy, from the best
// times of an exchange through the lanes (lane) and of a process_vm_readv
// (read) at each of kLaneProbe: UINT64_MAX if they win at the largest,
// else the smallest size from which on they lose at every size measured
// (0: even at the smallest).  A loss below a win is taken for noise.  An
// exchange not measured (kNotMeasured: the partner did not keep step),
// or a measurement whose reads failed (!ok), counts as a loss.
uint64_t lanes_limit(const int64_t lane[kLaneProbes], const int64_t read[kLaneProbes], bool ok);

// The node's limit from each rank's published word (lanes_upto's limit
// plus one, UINT64_MAX for none, 0 for a rank that did not measure): the
// least of the pairs' limits; *any false if no rank measured.
uint64_t node_lanes_limit(const std::vector<uint64_t> &words, bool *any);

// The size classes push_upto() times, from each size below the next.
constexpr int kPushClasses = 4;
constexpr uint64_t kPushProbe[kPushClasses] = {64 << 10, 256 << 10, 1 << 20, 2 << 20};

// The classes in which a push beats the single copy it replaces, bit i
// for kPushProbe[i], with 0x100 set (measured): a push wins unless the
// read is more than 10 % faster (the reads leave out what a split costs
// beside its copies).  A class either time of which is kNotMeasured is
// lost.
uint32_t push_wins(const int64_t push[kPushClasses], const int64_t read[kPushClasses]);

}  // namespace cadrt

#endif  // CADRT_VERDICTS_H
