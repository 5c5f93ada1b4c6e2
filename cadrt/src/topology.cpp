// topology.cpp - the machine: this process's place in it (hwloc), and a
// communicator's topology from its ranks' places (or CADRT_TOPOLOGY).
#include "runtime.h"

#include <hwloc.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "internal.h"
#include "spec.h"

namespace cadrt {

// Where my_place's topology came from (said under CADRT_VERBOSE).
const char *g_topology_from = "";

namespace {

// The topology cadrun loaded once for the job (CADRT_HWLOC_XML_FD: hwloc
// XML in a file it inherited), else from the system.
bool load_topology(hwloc_topology_t *t) {
  g_topology_from = "none: hwloc failed";
  long fd;
  struct stat st;
  if (env_long("CADRT_HWLOC_XML_FD", &fd) && fd >= 0 && fd <= INT32_MAX &&
      fstat(static_cast<int>(fd), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
      st.st_size <= (64 << 20)) {
    std::string xml(static_cast<size_t>(st.st_size), '\0');
    size_t got = 0;
    while (got < xml.size()) {
      const ssize_t r = pread(static_cast<int>(fd), &xml[got], xml.size() - got, static_cast<off_t>(got));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break;
      got += static_cast<size_t>(r);
    }
    // IS_THISSYSTEM: the XML describes this machine, so the binding
    // queries below ask the kernel.
    if (got == xml.size() && hwloc_topology_init(t) == 0) {
      if (hwloc_topology_set_xmlbuffer(*t, xml.data(), static_cast<int>(xml.size())) == 0 &&
          hwloc_topology_set_flags(*t, HWLOC_TOPOLOGY_FLAG_IS_THISSYSTEM) == 0 &&
          hwloc_topology_load(*t) == 0) {
        g_topology_from = "cadrun's (CADRT_HWLOC_XML_FD)";
        return true;
      }
      hwloc_topology_destroy(*t);
    }
  }
  if (hwloc_topology_init(t) != 0) return false;
  if (hwloc_topology_load(*t) == 0) {
    g_topology_from = "this system's";
    return true;
  }
  hwloc_topology_destroy(*t);
  return false;
}

}  // namespace

// This process's place in the machine: package, NUMA domain and L3 of the
// CPU it is bound to (or runs on, if it is not bound to one place).
void my_place(int32_t place[4]) {
  place[0] = 0;
  place[1] = place[2] = place[3] = -1;
  hwloc_topology_t t;
  if (!load_topology(&t)) return;
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  if (hwloc_get_cpubind(t, set, HWLOC_CPUBIND_PROCESS) != 0 || hwloc_bitmap_iszero(set) ||
      !hwloc_get_obj_covering_cpuset(t, set) ||
      hwloc_get_obj_covering_cpuset(t, set)->type == HWLOC_OBJ_MACHINE)
    hwloc_get_last_cpu_location(t, set, HWLOC_CPUBIND_THREAD);
  hwloc_obj_t obj = hwloc_get_obj_covering_cpuset(t, set);
  if (obj) {
    hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(t, HWLOC_OBJ_PACKAGE, obj);
    hwloc_obj_t l3 = hwloc_get_ancestor_obj_by_type(t, HWLOC_OBJ_L3CACHE, obj);
    if (obj->type == HWLOC_OBJ_PACKAGE) pkg = obj;
    if (obj->type == HWLOC_OBJ_L3CACHE) l3 = obj;
    place[1] = pkg ? static_cast<int32_t>(pkg->logical_index) : 0;
    place[2] = obj->nodeset && !hwloc_bitmap_iszero(obj->nodeset) ? hwloc_bitmap_first(obj->nodeset) : 0;
    place[3] = l3 ? static_cast<int32_t>(l3->logical_index) : place[1];
  }
  hwloc_bitmap_free(set);
  hwloc_topology_destroy(t);
}

// The topology of comm from its ranks' places (or CADRT_TOPOLOGY).
int Runtime::make_topology(cadrt_comm_s *comm, const std::vector<std::vector<int64_t>> &places) {
  cad::Machine m;
  std::string error;
  if (const char *file = env("CADRT_TOPOLOGY")) {
    if (!cad::load_machine(file, &m, &error)) return set_error(-EINVAL, "CADRT_TOPOLOGY: " + error);
  } else {
    bool known = true;
    for (const auto &p : places) known &= p[1] >= 0;
    if (!known) {
      comm->topo = cad::Topology::flat(comm->size);
      return 0;
    }
    m.flat = false;
    m.name = "hwloc";
    m.places = places;
  }
  std::shared_ptr<const cad::Topology> t;
  if (!cad::Topology::make(m, comm->size, &t, &error)) return set_error(-EINVAL, "topology: " + error);
  comm->topo = t;
  comm->places = places;
  return 0;
}

}  // namespace cadrt
