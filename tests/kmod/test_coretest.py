"""The core's C suites inside the kernel (cad_coretest.ko), case by case
against the same suites in user space (cad_selftest); and the harness's
static programs side by side.  Both in the boot the harness's tests share
(harness_run, tests/kmod/conftest.py)."""

import re
import subprocess

LINE = re.compile(r"CADTEST (PASS|FAIL) (\S+?)(?::|$)", re.M)
SUMMARY = re.compile(r"CADTEST SUMMARY passed=(\d+) failed=(\d+)")


def results(text):
    return {name: verdict for verdict, name in LINE.findall(text)}


def test_core_suites_pass_inside_the_kernel(build_dir, harness_run):
    user = subprocess.run([str(build_dir / "bin" / "cad_selftest")], capture_output=True, text=True)
    user_results = results(user.stdout)
    assert user.returncode == 0 and len(user_results) >= 300, user.stdout[-2000:]

    _, r = harness_run
    case = r.cases["coretest"]
    assert r.exit_code == 0, f"the VM run did not finish cleanly:\n{r.console[-4000:]}"
    assert case.status == 0 and "unloaded" in case.output, case.output
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
    print(f"{len(kernel_results)} cases passed in the kernel in {case.seconds:.1f} s")


def test_static_programs_run_side_by_side_in_the_vm(harness_run):
    """The harness for the kernel-module tests: statically linked programs in
    the initramfs, several processes at once, each one's output and status."""
    _, r = harness_run
    case = r.cases["side-by-side"]
    assert r.exit_code == 0, r.console[-4000:]
    assert case.status == 0, case.output
    assert case.output.count("CADTEST SUMMARY") == 2 and "failed=0" in case.output, case.output
    assert not r.kernel_problems(), "\n".join(r.kernel_problems())
