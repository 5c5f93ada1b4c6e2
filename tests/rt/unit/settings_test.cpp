// The settings table (cadrt/src/settings.h): lookups, families, the
// warning for a name it does not know, and its agreement with cadc.
#include "settings.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <set>
#include <string>

#include "collective.h"

namespace {

using cadrt::find_setting;
using cadrt::unknown_settings;

TEST(Settings, DeclaredNamesAreFound) {
  for (const char *name : {"CADRT_ENGINE", "CADRT_LIBRARY", "CADRT_PROOF_MAX_OPS", "CADMPI", "CADMPI_STATS",
                           "CADRT_RANK", "CADRT_FAULT_LANES"}) {
    const cadrt::Setting *s = find_setting(name);
    ASSERT_NE(s, nullptr) << name;
    EXPECT_STREQ(s->name, name);
  }
  EXPECT_EQ(find_setting("CADRT_ENGIN"), nullptr);
  EXPECT_EQ(find_setting("CADRT_ENGINE_"), nullptr);
  EXPECT_EQ(find_setting(""), nullptr);
}

// Every collective cadc knows has its CADRT_ALGORITHM_ member, and no
// other name does.
TEST(Settings, AlgorithmFamilyIsCadcsCollectives) {
  const cadrt::Setting *family = find_setting("CADRT_ALGORITHM_BCAST");
  ASSERT_NE(family, nullptr);
  EXPECT_STREQ(family->name, "CADRT_ALGORITHM_<COLL>");
  for (std::string coll : cad::collective_names()) {
    std::transform(coll.begin(), coll.end(), coll.begin(), [](unsigned char c) { return std::toupper(c); });
    EXPECT_EQ(find_setting("CADRT_ALGORITHM_" + coll), family) << coll;
  }
  EXPECT_EQ(find_setting("CADRT_ALGORITHM_"), nullptr);
  EXPECT_EQ(find_setting("CADRT_ALGORITHM_SCAN"), nullptr);
  EXPECT_EQ(find_setting("CADRT_ALGORITHM_<COLL>"), family);  // the row itself
}

TEST(Settings, UnknownNamesAreWarnedWithTheClosest) {
  const char *env[] = {"PATH=/bin",          "CADRT_ENGINE=poll",        "CADRT_ENGNE=poll",
                       "CADRT_ALGORITHM_ALLREDUC=x", "CADRT_COMPLETELY_OTHER=1", "CADRT_VERBOSE",
                       "CADMPI_STAT=1",      nullptr};
  const std::vector<std::string> w = unknown_settings(env);
  ASSERT_EQ(w.size(), 4u) << testing::PrintToString(w);
  EXPECT_EQ(w[0], "CADRT_ENGNE is not a cadrt setting (did you mean CADRT_ENGINE?)");
  EXPECT_EQ(w[1], "CADRT_ALGORITHM_ALLREDUC is not a cadrt setting (did you mean CADRT_ALGORITHM_ALLREDUCE?)");
  EXPECT_EQ(w[2], "CADRT_COMPLETELY_OTHER is not a cadrt setting");
  EXPECT_EQ(w[3], "CADMPI_STAT is not a cadrt setting (did you mean CADMPI_STATS?)");
  EXPECT_TRUE(unknown_settings(nullptr).empty());
}

TEST(Settings, EveryRowIsComplete) {
  std::set<std::string> seen;
  for (const cadrt::Setting &s : cadrt::settings()) {
    EXPECT_TRUE(seen.insert(s.name).second) << "declared twice: " << s.name;
    EXPECT_NE(std::string(s.help), "") << s.name;
    if (s.use == cadrt::SettingUse::User) {
      EXPECT_NE(std::string(s.fallback), "") << s.name;
    }
  }
}

TEST(Settings, MarkdownHasOneRowPerUserSetting) {
  const std::string md = cadrt::settings_markdown();
  size_t rows = 0, users = 0;
  for (size_t at = md.find("\n| `"); at != std::string::npos; at = md.find("\n| `", at + 1)) rows++;
  for (const cadrt::Setting &s : cadrt::settings()) users += s.use == cadrt::SettingUse::User;
  EXPECT_EQ(rows, users);
  EXPECT_EQ(md.find("CADRT_JOB_FD"), std::string::npos);
}

TEST(Settings, ReportShowsValuesOfFamilyMembers) {
  const char *env[] = {"CADRT_ALGORITHM_BCAST=bcast_binomial", "CADRT_ENGINE=", nullptr};
  const std::string r = cadrt::settings_report(env);
  EXPECT_NE(r.find("CADRT_ALGORITHM_BCAST    bcast_binomial"), std::string::npos) << r;
  EXPECT_NE(r.find("CADRT_ENGINE             (default)"), std::string::npos) << r;  // empty is unset
}

}  // namespace
