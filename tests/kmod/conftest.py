"""The boot the harness's own tests share (test_coretest.py,
test_vm_runtime.py): none of them loads cad.ko, and a boot of its own
each cost a kernel start and power-off apiece.  Each part is a case of
run_cases, with its own status and output; the kernel log is the boot's."""

import pytest

from vm import KERNEL_DEBUG, VM, built_module, run_cases, scaled

# The core's C suites inside the kernel: the module runs them at load
# (results in the kernel log), then unloads.
CORETEST = "insmod /cad_coretest.ko && rmmod cad_coretest && echo unloaded"

# Statically linked programs in the initramfs, several processes at once.
SIDE_BY_SIDE = """
cad_selftest > /tmp/a & a=$!
cad_selftest > /tmp/b & b=$!
wait $a; wait $b
tail -n 1 /tmp/a /tmp/b
! grep -h "CADTEST FAIL" /tmp/a /tmp/b
"""

# cadrt jobs under cadrun, dynamically linked (VM.add_program).
RUNS = {
    "all": f"cadrun -n 2 --timeout {scaled(100)} rt_check --coll all --sizes 0,1,1000",
    "bcast": f"cadrun -n 4 --timeout {scaled(100)} rt_check --coll bcast",
}


@pytest.fixture(scope="session")
def harness_run(build_dir):
    """One boot of the tests' kernel (KERNEL_DEBUG) with cad_coretest.ko,
    the static cad_selftest and cadrun with rt_check: the cases
    "coretest", "side-by-side", "loader" (what the loader in the VM
    resolves for rt_check) and "run-NAME" for each of RUNS."""
    vm = VM(append=KERNEL_DEBUG)
    vm.add_file(built_module(build_dir, "kmod/cad_coretest.ko"), "/cad_coretest.ko")
    vm.add_file(build_dir / "bin" / "cad_selftest_static", "/bin/cad_selftest")
    for program in ("cadrun", "rt_check"):
        path = build_dir / "bin" / program
        assert path.exists(), f"{path} is not built: run 'make build'"
        vm.add_program(path)
    cases = {"coretest": CORETEST, "side-by-side": SIDE_BY_SIDE,
             "loader": "/lib64/ld-linux-x86-64.so.2 --list /bin/rt_check"}
    cases.update({f"run-{name}": f"CADRT_ENGINE=poll {cmd}" for name, cmd in RUNS.items()})
    return vm, run_cases(vm, cases, timeout=900)
