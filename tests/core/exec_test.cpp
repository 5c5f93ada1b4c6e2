// exec_test.cpp - the executor suite (exec_cases.c, also run in the
// kernel): the state machine and whole collectives on the loopback engine.
#include "suite_gtest.h"

CAD_GTEST_SUITE(ExecTable, cad_suite_exec);
