"""cadrt jobs inside the VM: cadrun and rt_check are dynamically linked
(libcadrt.so through RUNPATH, libstdc++, hwloc, ...); VM.add_program brings
them with their libraries and the standard library file cad-std.cadlib
beside libcadrt.so.  This is the base for running the runtime against the
kernel module in the VM.  In the boot the harness's tests share
(harness_run, tests/kmod/conftest.py)."""


def test_cadrun_jobs_run_in_the_vm(build_dir, harness_run):
    vm, r = harness_run
    assert str(build_dir / "lib" / "libcadrt.so.0") in vm.files  # by its SONAME
    assert str(build_dir / "lib" / "cad-std.cadlib") in vm.files

    assert r.exit_code == 0, f"the VM run did not finish cleanly:\n{r.console[-4000:]}"
    # The loader in the VM finds every library where ldd did on the host.
    loader = r.cases["loader"]
    assert loader.status == 0 and "not found" not in loader.output, loader.output
    assert f"libcadrt.so.0 => {build_dir / 'lib' / 'libcadrt.so.0'}" in loader.output, loader.output
    runs = {name: case for name, case in r.cases.items() if name.startswith("run-")}
    assert sorted(runs) == ["run-all", "run-bcast"], sorted(r.cases)
    for case in runs.values():
        assert case.status == 0, f"{case.command} exited {case.status}:\n{case.output}"
        assert "not found" not in case.output, case.output
        assert "rt_check: ok" in case.output and "engine poll" in case.output, case.output
        print(f"{case.command}: {case.seconds:.2f} s in the VM")
    assert not r.kernel_problems(), "\n".join(r.kernel_problems())
    print(f"boot, jobs and power-off: {r.seconds:.1f} s")
