// cmd_topo.cpp - cadc topo [-o FILE]: this machine's topology, from hwloc,
// in the format of schemas/topology.schema.json: the regular form (counts
// per level) when the machine is regular, else one place per core.
#include <hwloc.h>
#include <unistd.h>

#include <fstream>
#include <iostream>
#include <set>

#include "../lib/topology.h"
#include "common.h"

namespace cad::tool {

namespace {

struct TopoOptions {
  std::string output;
  bool places = false;
};

// Index of the object of a type that contains a core (0 if none).
int64_t index_of(hwloc_topology_t t, hwloc_obj_t core, hwloc_obj_type_t type) {
  const int n = hwloc_get_nbobjs_by_type(t, type);
  for (int i = 0; i < n; i++) {
    hwloc_obj_t o = hwloc_get_obj_by_type(t, type, i);
    if (o->cpuset && hwloc_bitmap_isincluded(core->cpuset, o->cpuset)) return i;
  }
  return 0;
}

}  // namespace

void add_topo(CLI::App &app, Runner *run) {
  auto opt = std::make_shared<TopoOptions>();
  CLI::App *cmd = app.add_subcommand("topo", "Write this machine's topology (hwloc) as a topology file");
  cmd->add_option("-o,--output", opt->output, "Write to this file (default: stdout)");
  cmd->add_flag("--places", opt->places, "One place per core, even for a regular machine");
  cmd->callback([opt, run] {
    *run = [opt] {
      hwloc_topology_t t;
      if (hwloc_topology_init(&t) || hwloc_topology_load(t)) throw UsageError("hwloc cannot read this machine's topology");
      Machine m;
      m.flat = false;
      char host[256] = "this machine";
      gethostname(host, sizeof(host) - 1);
      m.name = host;
      const int cores = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE);
      std::set<int64_t> pk, nu, l3;
      for (int c = 0; c < cores; c++) {
        hwloc_obj_t core = hwloc_get_obj_by_type(t, HWLOC_OBJ_CORE, c);
        std::vector<int64_t> place{0, index_of(t, core, HWLOC_OBJ_PACKAGE), index_of(t, core, HWLOC_OBJ_NUMANODE),
                                   index_of(t, core, HWLOC_OBJ_L3CACHE)};
        pk.insert(place[1]);
        nu.insert(place[2]);
        l3.insert(place[3]);
        m.places.push_back(place);
      }
      hwloc_topology_destroy(t);
      if (m.places.empty()) throw UsageError("hwloc found no cores");
      // Regular: every package has the same number of NUMA domains, every
      // NUMA domain of L3s, every L3 of cores, in block order.
      const int64_t npk = pk.size(), nnu = nu.size(), nl3 = l3.size(), nc = m.places.size();
      bool regular = !opt->places && nnu % npk == 0 && nl3 % nnu == 0 && nc % nl3 == 0;
      for (int64_t c = 0; regular && c < nc; c++) {
        const int64_t per_l3 = nc / nl3, per_numa = per_l3 * (nl3 / nnu), per_pkg = per_numa * (nnu / npk);
        regular = m.places[c][1] == c / per_pkg && m.places[c][2] == c / per_numa && m.places[c][3] == c / per_l3;
      }
      if (regular) {
        m.packages_per_node = npk;
        m.numa_per_package = nnu / npk;
        m.l3_per_numa = nl3 / nnu;
        m.cores_per_l3 = nc / nl3;
        m.places.clear();
      }
      const std::string text = m.to_json().dump(2) + "\n";
      if (opt->output.empty()) {
        std::cout << text;
      } else {
        std::ofstream f(opt->output);
        if (!(f << text)) throw UsageError("cannot write " + opt->output);
      }
      return kOk;
    };
  });
}

}  // namespace cad::tool
