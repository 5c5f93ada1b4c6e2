// log_test.cpp - the core's own formatter must agree with the C library's
// snprintf on every conversion it supports, and the log must stay
// NUL-terminated however it is filled.
#include <climits>
#include <cstdio>
#include <cstring>
#include <string>

#include <gtest/gtest.h>

#include "../../kmod/core/cad_core.h"

#define EXPECT_FORMAT(...)                                                  \
  do {                                                                      \
    char want[256], got[256];                                               \
    int nw = std::snprintf(want, sizeof(want), __VA_ARGS__);                \
    int ng = cad_snprintf(got, sizeof(got), __VA_ARGS__);                   \
    EXPECT_STREQ(got, want);                                                \
    EXPECT_EQ(ng, nw);                                                      \
  } while (0)

TEST(Log, FormatsLikeSnprintf) {
  EXPECT_FORMAT("plain text");
  EXPECT_FORMAT("%d %d %d %d", 0, -1, INT_MAX, INT_MIN);
  EXPECT_FORMAT("%u %u %x %x", 0u, UINT_MAX, 0xabcdefu, 0u);
  EXPECT_FORMAT("%lld %lld %llu %llx", LLONG_MIN, LLONG_MAX, ULLONG_MAX, 0x123456789abcdefull);
  EXPECT_FORMAT("%ld %lu %lx", -5L, 7UL, 255UL);
  EXPECT_FORMAT("[%5d] [%-5d] [%05d] [%05d] [%-6s] [%6s]", 42, 42, 42, -42, "ab", "ab");
  EXPECT_FORMAT("%08x %02x %4u%%", 0xbeefu, 0x7u, 99u);
  EXPECT_FORMAT("%c%c %s", 'o', 'k', "");
  EXPECT_FORMAT("%i", -17);
}

// The next two tests pass what the format checker rightly refuses.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat"
#pragma GCC diagnostic ignored "-Wformat-overflow"
#pragma GCC diagnostic ignored "-Wformat-extra-args"

TEST(Log, TruncatesAndTerminates) {
  char buf[8];
  EXPECT_EQ(cad_snprintf(buf, sizeof(buf), "%s", "0123456789"), 10);
  EXPECT_STREQ(buf, "0123456");
  EXPECT_EQ(cad_snprintf(nullptr, 0, "%d", 12345), 5);
  EXPECT_EQ(cad_snprintf(buf, 1, "x"), 1);
  EXPECT_STREQ(buf, "");
  char nul[4];
  cad_snprintf(nul, sizeof(nul), "%s", static_cast<const char *>(nullptr));
  EXPECT_STREQ(nul, "(nu");
}

TEST(Log, UnknownConversionIsPrintedAsIs) {
  char buf[32];
  cad_snprintf(buf, sizeof(buf), "%q %");
  EXPECT_STREQ(buf, "%q %");
}

#pragma GCC diagnostic pop

TEST(Log, AppendsUntilFullThenMarksTruncated) {
  char buf[12];
  cad_log log;
  cad_log_init(&log, buf, sizeof(buf));
  cad_logf(&log, "%s", "abc");
  cad_logf(&log, "%d", 42);
  EXPECT_STREQ(buf, "abc42");
  EXPECT_FALSE(log.truncated);
  cad_logf(&log, "%s", "0123456789");
  EXPECT_TRUE(log.truncated);
  EXPECT_EQ(std::strlen(buf), 11u);
  EXPECT_EQ(log.len, 11u);
  cad_logf(&log, "more");  // full: nothing changes, nothing breaks
  EXPECT_EQ(std::strlen(buf), 11u);
  cad_log none;
  cad_log_init(&none, nullptr, 100);
  cad_logf(&none, "dropped");
  EXPECT_EQ(none.len, 0u);
}
