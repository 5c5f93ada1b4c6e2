// paths.h - where cad.ko is, seen from the folder of libcadrt.so (or of
// cadrun's lib: bin/../lib), in a build tree or an installed one.
#pragma once

#include <sys/stat.h>
#include <sys/utsname.h>

#include <filesystem>
#include <string>

namespace cadrt {

// The cad.ko built for the running kernel beside libdir -- installed,
// libdir/modules/RELEASE/extra/cad.ko; built, libdir/../kmod/cad.ko --
// or "" when neither is there.
inline std::string module_beside(const std::string &libdir) {
  struct utsname u;
  struct stat st;
  std::string candidates[2] = {"", libdir + "/../kmod/cad.ko"};
  if (uname(&u) == 0) candidates[0] = libdir + "/modules/" + u.release + "/extra/cad.ko";
  for (const std::string &c : candidates)
    if (!c.empty() && stat(c.c_str(), &st) == 0 && S_ISREG(st.st_mode))
      return std::filesystem::path(c).lexically_normal().string();
  return "";
}

// How to load the module, for an error or cadrun --info.
inline std::string module_hint(const std::string &libdir) {
  const std::string ko = module_beside(libdir);
  if (!ko.empty()) return "load the module as root: insmod " + ko;
  return "load the module as root: modprobe cad (make install puts cad.ko under lib/modules/RELEASE/extra; "
         "it is built for the kernel whose headers the build found)";
}

}  // namespace cadrt
