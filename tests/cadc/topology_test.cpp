// topology_test.cpp - placing ranks on machines, and the queries.
#include <nlohmann/json.hpp>

#include "helpers.h"
#include "topology.h"

namespace {

std::shared_ptr<const cad::Topology> place(const nlohmann::json &j, int64_t P) {
  cad::Machine m;
  std::string error;
  EXPECT_TRUE(cad::Machine::from_json(j, &m, &error)) << error;
  std::shared_ptr<const cad::Topology> t;
  EXPECT_TRUE(cad::Topology::make(m, P, &t, &error)) << error;
  return t;
}

}  // namespace

TEST(Topology, BlockMappingOnTwoSockets) {
  auto t = place({{"packages_per_node", 2}, {"numa_per_package", 2}, {"cores_per_l3", 4}}, 16);
  EXPECT_EQ(t->ndomains(cad::kNode), 1);
  EXPECT_EQ(t->ndomains(cad::kPackage), 2);
  EXPECT_EQ(t->ndomains(cad::kNuma), 4);
  EXPECT_EQ(t->domain(cad::kNuma, 5), 1);
  EXPECT_EQ(t->leader(cad::kNuma, 5), 4);
  EXPECT_EQ(t->local_rank(cad::kNuma, 5), 1);
  EXPECT_EQ(t->local_size(cad::kPackage, 15), 8);
  EXPECT_EQ(t->domain_rank(cad::kNuma, 3, 2), 14);
}

TEST(Topology, CyclicMappingAndOversubscription) {
  auto t = place({{"nodes", 2}, {"cores_per_l3", 2}, {"mapping", "cyclic"}}, 6);
  EXPECT_EQ(t->domain(cad::kNode, 0), 0);
  EXPECT_EQ(t->domain(cad::kNode, 1), 1);
  EXPECT_EQ(t->domain(cad::kNode, 2), 0);
  EXPECT_EQ(t->local_size(cad::kNode, 0), 3);  // 4 cores, 6 ranks: wraps
  EXPECT_EQ(t->leader(cad::kNode, 5), 1);
}

TEST(Topology, ExplicitPlacesAndTheirLimit) {
  const nlohmann::json j = {{"places", {{0, 0, 0, 0}, {0, 1, 1, 1}, {0, 0, 0, 0}}}};
  auto t = place(j, 3);
  EXPECT_EQ(t->domain(cad::kPackage, 2), 0);
  EXPECT_EQ(t->domain(cad::kPackage, 1), 1);
  cad::Machine m;
  std::string error;
  ASSERT_TRUE(cad::Machine::from_json(j, &m, &error));
  std::shared_ptr<const cad::Topology> big;
  EXPECT_FALSE(cad::Topology::make(m, 4, &big, &error));
  EXPECT_NE(error.find("places 3 ranks, not 4"), std::string::npos);
}

TEST(Topology, FlatAnswersWithoutTables) {
  auto t = cad::Topology::flat(1 << 20);
  EXPECT_EQ(t->ndomains(cad::kNuma), 1);
  EXPECT_EQ(t->leader(cad::kL3, 12345), 0);
  EXPECT_EQ(t->local_rank(cad::kL3, 12345), 12345);
  EXPECT_EQ(t->domain_rank(cad::kNode, 0, 77), 77);
}

TEST(Topology, RejectsBadDocuments) {
  cad::Machine m;
  std::string error;
  EXPECT_FALSE(cad::Machine::from_json({{"nodes", 0}}, &m, &error));
  EXPECT_FALSE(cad::Machine::from_json({{"cores", 4}}, &m, &error));
  EXPECT_NE(error.find("unknown key"), std::string::npos);
  EXPECT_FALSE(cad::Machine::from_json({{"places", {{0, 1}}}}, &m, &error));
}

// Each count is within the schema's 1..2^20, but their product is 2^80,
// which wrapped to 0 cores: Topology::make divided by it (SIGFPE).
TEST(Topology, RejectsAMachineTooLargeToNumber) {
  cad::Machine m;
  std::string error;
  const int64_t big = 1 << 20;
  EXPECT_FALSE(cad::Machine::from_json(
      {{"packages_per_node", big}, {"numa_per_package", big}, {"l3_per_numa", big}, {"cores_per_l3", big}}, &m,
      &error));
  EXPECT_NE(error.find("more than 1073741824 cores"), std::string::npos) << error;
  EXPECT_FALSE(cad::Machine::from_json({{"nodes", 2049}, {"cores_per_l3", 1 << 19}}, &m, &error));
  ASSERT_TRUE(cad::Machine::from_json({{"nodes", 1024}, {"cores_per_l3", 1 << 20}}, &m, &error)) << error;
  std::shared_ptr<const cad::Topology> t;
  ASSERT_TRUE(cad::Topology::make(m, 8, &t, &error)) << error;
  EXPECT_EQ(t->ndomains(cad::kNode), 1);
}
