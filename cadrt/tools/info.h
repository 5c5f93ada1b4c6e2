// info.h - cadrun --info (info.cpp).
#pragma once

namespace cadrt {

// Prints the version, the library cadrt would load, each engine and why
// it is or is not available here, and the settings; returns 0.
int print_info(const char *program, const char *version);

}  // namespace cadrt
