"""cadrt jobs inside the VM: cadrun and rt_check are dynamically linked
(libcadrt.so through RUNPATH, libstdc++, hwloc, ...); VM.add_program brings
them with their libraries and the standard library file cad-std.cadlib
beside libcadrt.so.  This is the base for running the runtime against the
kernel module in the VM."""

import re

from vm import VM

RUNS = {
    "all": "cadrun -n 2 --timeout 100 rt_check --coll all --sizes 0,1,1000",
    "bcast": "cadrun -n 4 --timeout 100 rt_check --coll bcast",
}


def test_cadrun_jobs_run_in_the_vm(build_dir):
    vm = VM()
    for program in ("cadrun", "rt_check"):
        path = build_dir / "bin" / program
        assert path.exists(), f"{path} is not built: run 'make build'"
        vm.add_program(path)
    assert str(build_dir / "lib" / "libcadrt.so") in vm.files
    assert str(build_dir / "lib" / "cad-std.cadlib") in vm.files

    script = ["export CADRT_ENGINE=poll",
              # The loader in the VM finds every library where ldd did on the host.
              "/lib64/ld-linux-x86-64.so.2 --list /bin/rt_check"]
    for name, cmd in RUNS.items():
        script += [f'echo "@@RUN {name} start $(cut -d" " -f1 /proc/uptime)"',
                   f"{cmd} > /tmp/{name} 2>&1 && s=0 || s=$?",
                   f"cat /tmp/{name}",
                   f'echo "@@RUN {name} end $s $(cut -d" " -f1 /proc/uptime)"']
    r = vm.run("\n".join(script), timeout=600)

    assert r.exit_code == 0, f"the VM run did not finish cleanly:\n{r.console[-4000:]}"
    assert "not found" not in r.output, r.output
    assert f"libcadrt.so => {build_dir / 'lib' / 'libcadrt.so'}" in r.output, r.output
    for name in RUNS:
        m = re.search(rf"@@RUN {name} start (\S+)\n(.*?)@@RUN {name} end (\d+) (\S+)", r.output, re.S)
        assert m, r.output
        start, out, status, end = m.groups()
        assert int(status) == 0, f"{RUNS[name]} exited {status}:\n{out}"
        assert "rt_check: ok" in out and "engine poll" in out, out
        print(f"{RUNS[name]}: {float(end) - float(start):.2f} s in the VM")
    assert not r.kernel_problems(), "\n".join(r.kernel_problems())
    print(f"boot, jobs and power-off: {r.seconds:.1f} s")
