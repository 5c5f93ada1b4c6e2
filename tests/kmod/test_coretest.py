"""The core's C suites inside the kernel (cad_coretest.ko), case by case
against the same suites in user space (cad_selftest)."""

import re
import subprocess

from vm import KERNEL_DEBUG, VM

LINE = re.compile(r"CADTEST (PASS|FAIL) (\S+?)(?::|$)", re.M)
SUMMARY = re.compile(r"CADTEST SUMMARY passed=(\d+) failed=(\d+)")


def results(text):
    return {name: verdict for verdict, name in LINE.findall(text)}


def test_core_suites_pass_inside_the_kernel(build_dir):
    module = build_dir / "kmod" / "cad_coretest.ko"
    assert module.exists(), f"{module} is not built: run 'make build'"
    user = subprocess.run([str(build_dir / "bin" / "cad_selftest")], capture_output=True, text=True)
    user_results = results(user.stdout)
    assert user.returncode == 0 and len(user_results) >= 300, user.stdout[-2000:]

    vm = VM(append=KERNEL_DEBUG)
    vm.add_file(module, "/cad_coretest.ko")
    r = vm.run("insmod /cad_coretest.ko\nrmmod cad_coretest\necho unloaded")

    assert r.exit_code == 0, f"the VM run did not finish cleanly:\n{r.console[-4000:]}"
    assert "unloaded" in r.output
    summary = SUMMARY.search(r.dmesg)
    assert summary, f"no CADTEST summary in the kernel log:\n{r.dmesg[-4000:]}"
    kernel_results = results(r.dmesg)
    failures = [line for line in r.dmesg.splitlines() if "CADTEST FAIL" in line]
    assert not failures, "\n".join(failures)
    assert kernel_results == user_results, (
        "the kernel ran other cases than user space: "
        f"{sorted(set(kernel_results) ^ set(user_results))[:20]}")
    assert int(summary.group(1)) == len(user_results)
    assert not r.kernel_problems(), "\n".join(r.kernel_problems())
    print(f"{len(kernel_results)} cases passed in the kernel in {r.seconds:.1f} s")


def test_static_programs_run_side_by_side_in_the_vm(build_dir):
    """The harness for the kernel-module tests: statically linked programs in
    the initramfs, several processes at once, each one's output and status."""
    vm = VM()
    vm.add_file(build_dir / "bin" / "cad_selftest_static", "/bin/cad_selftest")
    r = vm.run("""
        cad_selftest > /tmp/a & a=$!
        cad_selftest > /tmp/b & b=$!
        wait $a; wait $b
        tail -n 1 /tmp/a /tmp/b
        ! grep -h "CADTEST FAIL" /tmp/a /tmp/b
    """)
    assert r.exit_code == 0, r.console[-4000:]
    assert r.output.count("CADTEST SUMMARY") == 2 and "failed=0" in r.output, r.output
    assert not r.kernel_problems(), "\n".join(r.kernel_problems())
