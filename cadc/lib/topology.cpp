// topology.cpp - see topology.h.
#include "topology.h"

#include <map>

#include <nlohmann/json.hpp>

namespace cad {

namespace {

bool positive(const nlohmann::json &j, const char *key, int64_t *out, std::string *error) {
  if (!j.contains(key)) return true;
  const nlohmann::json &v = j[key];
  if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > (1 << 20)) {
    *error = std::string("\"") + key + "\" must be an integer from 1 to 1048576";
    return false;
  }
  *out = v.get<int64_t>();
  return true;
}

}  // namespace

bool Machine::from_json(const nlohmann::json &j, Machine *out, std::string *error) {
  Machine m;
  m.flat = false;
  if (!j.is_object()) {
    *error = "a topology is a JSON object";
    return false;
  }
  static const char *const kKeys[] = {"name", "nodes", "packages_per_node", "numa_per_package",
                                      "l3_per_numa", "cores_per_l3", "mapping", "places"};
  for (auto it = j.begin(); it != j.end(); ++it) {
    bool known = false;
    for (const char *k : kKeys) known |= it.key() == k;
    if (!known) {
      *error = "unknown key \"" + it.key() + "\"";
      return false;
    }
  }
  if (j.contains("name")) {
    if (!j["name"].is_string()) {
      *error = "\"name\" must be a string";
      return false;
    }
    m.name = j["name"].get<std::string>();
  } else {
    m.name = "topology";
  }
  if (!positive(j, "nodes", &m.nodes, error) ||
      !positive(j, "packages_per_node", &m.packages_per_node, error) ||
      !positive(j, "numa_per_package", &m.numa_per_package, error) ||
      !positive(j, "l3_per_numa", &m.l3_per_numa, error) ||
      !positive(j, "cores_per_l3", &m.cores_per_l3, error))
    return false;
  // Topology::make numbers cores with int64_t arithmetic: the product of the
  // counts must stay far from overflowing (2^20 at each of five levels is
  // 2^100, which wrapped to 0 cores and divided by it).
  int64_t cores = 1;
  for (int64_t count : {m.nodes, m.packages_per_node, m.numa_per_package, m.l3_per_numa, m.cores_per_l3}) {
    cores *= count;  // at most 2^30 * 2^20
    if (cores > kMaxCores) {
      *error = "the machine has more than " + std::to_string(kMaxCores) +
               " cores (nodes * packages_per_node * numa_per_package * l3_per_numa * cores_per_l3)";
      return false;
    }
  }
  if (j.contains("mapping")) {
    if (!j["mapping"].is_string() || (j["mapping"] != "block" && j["mapping"] != "cyclic")) {
      *error = "\"mapping\" must be \"block\" or \"cyclic\"";
      return false;
    }
    m.mapping = j["mapping"].get<std::string>();
  }
  if (j.contains("places")) {
    const nlohmann::json &p = j["places"];
    if (!p.is_array() || p.empty()) {
      *error = "\"places\" must be a non-empty array of [node, package, numa, l3]";
      return false;
    }
    for (size_t i = 0; i < p.size(); i++) {
      const nlohmann::json &e = p[i];
      if (!e.is_array() || e.size() != 4) {
        *error = "place " + std::to_string(i) + " must be [node, package, numa, l3]";
        return false;
      }
      std::vector<int64_t> place;
      for (const nlohmann::json &x : e) {
        if (!x.is_number_integer() || x.get<int64_t>() < 0) {
          *error = "place " + std::to_string(i) + " holds a negative or non-integer number";
          return false;
        }
        place.push_back(x.get<int64_t>());
      }
      m.places.push_back(place);
    }
  }
  *out = std::move(m);
  return true;
}

nlohmann::ordered_json Machine::to_json() const {
  nlohmann::ordered_json j;
  j["name"] = name;
  if (!places.empty()) {
    j["places"] = places;
    return j;
  }
  j["nodes"] = nodes;
  j["packages_per_node"] = packages_per_node;
  j["numa_per_package"] = numa_per_package;
  j["l3_per_numa"] = l3_per_numa;
  j["cores_per_l3"] = cores_per_l3;
  j["mapping"] = mapping;
  return j;
}

std::shared_ptr<const Topology> Topology::flat(int64_t P) {
  auto t = std::make_shared<Topology>();
  t->P_ = P;
  return t;
}

bool Topology::make(const Machine &m, int64_t P, std::shared_ptr<const Topology> *out,
                    std::string *error) {
  if (m.flat) {
    *out = flat(P);
    return true;
  }
  if (!m.places.empty() && P > static_cast<int64_t>(m.places.size())) {
    *error = "topology \"" + m.name + "\" places " + std::to_string(m.places.size()) +
             " ranks, not " + std::to_string(P);
    return false;
  }
  auto t = std::make_shared<Topology>();
  t->P_ = P;
  t->flat_ = false;
  t->name_ = m.name;
  t->machine_ = m;
  // Each rank's place as a path (node, package, numa, l3) of global ids.
  const int64_t per_node = m.packages_per_node * m.numa_per_package * m.l3_per_numa * m.cores_per_l3;
  const int64_t cores = m.nodes * per_node;
  std::vector<std::vector<int64_t>> place(P);
  for (int64_t r = 0; r < P; r++) {
    if (!m.places.empty()) {
      place[r] = m.places[r];
      continue;
    }
    int64_t core = r % cores;  // more ranks than cores: oversubscribe in turn
    if (m.mapping == "cyclic") core = (core % m.nodes) * per_node + core / m.nodes;
    const int64_t node = core / per_node, in_node = core % per_node;
    const int64_t per_pkg = per_node / m.packages_per_node, per_numa = per_pkg / m.numa_per_package;
    place[r] = {node, in_node / per_pkg, in_node % per_pkg / per_numa,
                in_node % per_numa / m.cores_per_l3};
  }
  // Domain at level L = the prefix of the place up to L, numbered densely
  // in the order of the domains' first ranks.
  for (int level = 0; level < kLevels; level++) {
    std::map<std::vector<int64_t>, int64_t> ids;
    t->dom_[level].resize(P);
    t->local_[level].resize(P);
    for (int64_t r = 0; r < P; r++) {
      std::vector<int64_t> key(place[r].begin(), place[r].begin() + level + 1);
      auto it = ids.emplace(key, static_cast<int64_t>(ids.size())).first;
      const int64_t d = it->second;
      if (d == static_cast<int64_t>(t->members_[level].size())) t->members_[level].emplace_back();
      t->dom_[level][r] = d;
      t->local_[level][r] = static_cast<int64_t>(t->members_[level][d].size());
      t->members_[level][d].push_back(r);
    }
  }
  *out = t;
  return true;
}

}  // namespace cad
