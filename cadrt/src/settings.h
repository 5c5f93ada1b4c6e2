// settings.h - every environment variable cadrt reads, declared once.
//
// The table in settings.cpp is the one place a CADRT_* (or CADMPI*)
// variable is named with its default and meaning: the runtime reads a
// variable only through setting() (an undeclared name is a bug, and
// aborts), `cadrun --settings` prints the table with this environment's
// values, docs/runtime.md's environment table is that command's markdown
// (a docs test compares them), and cadrt_init warns about a CADRT_* name
// in the environment that the table does not know.
#pragma once

#include <string>
#include <vector>

namespace cadrt {

// Who sets a variable: the user, cadrun for its ranks, or the tests
// (read only by a build with CADRT_FAULT_INJECTION).
enum class SettingUse { User, Launcher, Test };

struct Setting {
  const char *name;   // CADRT_ENGINE; a family is its prefix with "<...>" (CADRT_ALGORITHM_<COLL>)
  const char *fallback;  // the default, as the documentation states it
  const char *help;      // what it does (markdown)
  SettingUse use;
};

// The table, in the documentation's order.
const std::vector<Setting> &settings();

// The declared setting name is or belongs to (a family's member), or null.
const Setting *find_setting(const std::string &name);

// The value of a declared variable, nullptr when unset or empty.  name
// must be in the table: an undeclared one aborts with a message.
const char *setting(const char *name);

// One warning per CADRT_* or CADMPI* variable of env (a NAME=VALUE list ending in
// nullptr, as environ) that is not a declared setting, naming the closest
// declared one when there is one near.
std::vector<std::string> unknown_settings(const char *const *env);

// The user settings as docs/runtime.md's table (markdown, header included);
// with values: name, value here, where it came from, default (cadrun
// --settings).
std::string settings_markdown();
std::string settings_report(const char *const *env);

}  // namespace cadrt
