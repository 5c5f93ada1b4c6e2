// proof.cpp - see proof.h.
#include "proof.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "verify.h"

namespace cadrt {

std::string ProofGate::configure(const char *policy, const char *cache_file, const char *max_ops,
                                 const std::string &library_hash) {
  *this = ProofGate();
  if (max_ops) {
    char *end = nullptr;
    errno = 0;
    const unsigned long long v = isdigit(static_cast<unsigned char>(*max_ops)) ? strtoull(max_ops, &end, 10) : 0;
    if (!end || *end || errno || v == 0 || v > cad::kMaxOpsPerInstance)
      return std::string("CADRT_PROOF_MAX_OPS=") + max_ops + ": not a number of operations from 1 to " +
             std::to_string(cad::kMaxOpsPerInstance);
    max_ops_ = v;
  }
  const std::string p = policy ? policy : "online";
  if (p == "online") {
    policy_ = ProofPolicy::Online;
  } else if (p == "exact") {
    policy_ = ProofPolicy::Exact;
  } else if (p == "strict") {
    policy_ = ProofPolicy::Strict;
  } else if (p == "off") {
    policy_ = ProofPolicy::Off;
  } else {
    return "CADRT_PROOF=" + p + ": not one of online, exact, strict, off";
  }
  if (cache_file) {
    if (policy_ != ProofPolicy::Online && policy_ != ProofPolicy::Exact)
      return std::string("CADRT_PROOF_CACHE=") + cache_file +
             ": proofs on arrival are made only under CADRT_PROOF=online or exact";
    cache_file_ = cache_file;
  }
  library_hash_ = library_hash;
  return "";
}

// A line of the cache file: the library's hash, the key, 1 or 0, the note,
// separated by tabs (a key or note has none: describe() and the notes
// are one line of spaces).
void ProofGate::load_cache_file() {
  cache_loaded_ = true;
  std::ifstream in(cache_file_);
  std::string line;
  while (std::getline(in, line)) {
    const size_t a = line.find('\t'), b = line.find('\t', a + 1), c = line.find('\t', b + 1);
    if (c == std::string::npos || line.compare(0, a, library_hash_) != 0) continue;
    const std::string verdict = line.substr(b + 1, c - b - 1);
    if (verdict != "1" && verdict != "0") continue;
    verdicts_.emplace(line.substr(a + 1, b - a - 1), Verdict{verdict == "1", line.substr(c + 1) + " (the verdict "
                                                                                 "kept in CADRT_PROOF_CACHE)"});
  }
}

void ProofGate::append_cache_file(const std::string &key, const Verdict &v) const {
  std::string line = library_hash_ + "\t" + key + "\t" + (v.proven ? "1" : "0") + "\t" + v.note;
  for (char &ch : line)
    if (ch == '\n') ch = ' ';
  line += '\n';
  // One write of one line in append mode: ranks that prove the same key
  // at once add the same line twice, never a torn one.
  const int fd = open(cache_file_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return;  // (a cache it cannot write is a cache it does not keep)
  ssize_t put = write(fd, line.data(), line.size());
  (void)put;
  close(fd);
}

// The verdict for key, from memory, the cache file, or proven now: the
// key at its size classes and spec.n, or (exact_only) spec alone.
ProofGate::Verdict ProofGate::prove(const std::string &key, const std::string &outside, const cad::Library &lib,
                                    const cad::Algorithm &a, const cad::InstanceSpec &spec, bool exact_only) {
  if (!cache_file_.empty() && !cache_loaded_) load_cache_file();
  auto it = verdicts_.find(key);
  if (it != verdicts_.end()) {
    counts_.cached++;
    return it->second;
  }
  const auto t0 = std::chrono::steady_clock::now();
  cad::InstanceSpec bounded = spec;
  bounded.limits.ops_per_instance = max_ops_;
  cad::ArrivalProof p;
  if (exact_only) {
    cad::Diagnostics diags;
    const cad::InstanceResult r = cad::verify_instance(a, bounded, lib.sm, &diags);
    p.proven = r.outcome != cad::Outcome::Failed && r.outcome != cad::Outcome::NotRun;
    p.instances = r.outcome == cad::Outcome::Verified;
    if (!p.proven) p.why = diags.empty() ? "not verified" : diags.list()[0].message;
  } else {
    p = cad::prove_on_arrival(a, bounded, lib.sm);
  }
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  counts_.prove_ms += ms;
  Verdict got;
  got.proven = p.proven;
  char took[64];
  snprintf(took, sizeof took, "%llu instances in %.1f ms", static_cast<unsigned long long>(p.instances), ms);
  got.note = p.proven ? outside + ": proven on arrival, " + took : outside + ", and it does not verify there: " + p.why;
  if (p.proven) (exact_only ? counts_.exact : counts_.proven)++;
  it = verdicts_.emplace(key, got).first;
  if (!cache_file_.empty()) append_cache_file(key, got);
  return it->second;
}

cad::GateVerdict ProofGate::decide(const cad::Library &lib, const cad::Algorithm &a, const cad::InstanceSpec &spec) {
  cad::GateVerdict v;
  if (policy_ == ProofPolicy::Off) {
    v.note = "not checked (CADRT_PROOF=off)";
    return v;
  }
  std::string outside = "the library records no proven domain for it";
  const cad::Domain *d = lib.domain(a.name);
  const bool inside = d && cad::covers(*d, a, spec, &outside);
  if (!inside) {
    outside = "outside its proven domain (" + outside + ")";
    if (policy_ == ProofPolicy::Strict) {
      v.run = false;
      v.note = outside + ": refused (CADRT_PROOF=strict)";
    } else {
      const Verdict got = prove(cad::proof_key(a, spec), outside, lib, a, spec, false);
      v.run = got.proven;
      v.note = got.note;
    }
  }
  if (v.run && policy_ == ProofPolicy::Exact) {
    // Its n verified (one of its key's size classes, which the build or
    // the key's proof verified), or verified now.
    const std::string key = cad::proof_key(a, spec);
    auto it = classes_.find(key);
    if (it == classes_.end())
      it = classes_
               .emplace(key, cad::size_classes(a, spec,
                                               d ? d->sizes
                                                 : a.sweep.sizes.present() ? a.sweep.sizes.values()
                                                                           : std::vector<int64_t>{}))
               .first;
    if (!std::binary_search(it->second.begin(), it->second.end(), spec.n)) {
      const Verdict e = prove(key + " n=" + std::to_string(spec.n),
                              (inside ? std::string("inside its proven domain") : v.note) + "; n=" +
                                  std::to_string(spec.n) + " is none of its key's size classes",
                              lib, a, spec, true);
      v.run = e.proven;
      v.note = e.note;
    }
  }
  if (!v.run) counts_.refused++;
  else if (inside && v.note.empty()) counts_.inside++;
  return v;
}

}  // namespace cadrt
