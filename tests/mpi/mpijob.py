"""Running an MPI job for the tests: Open MPI's mpirun as root, more
ranks than cores, with libcadmpi.so preloaded or not, and the counts
libcadmpi prints under CADMPI_STATS=1."""

import os
import re
import subprocess
from pathlib import Path

MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none"]


def mpirun(build_dir, n, *args, env=None, preload=True, timeout=300, program="mpi_check", cwd=None, stdin=None):
    """program: a name in build_dir/bin, or a Path run as it is; stdin:
    text for rank 0's standard input (mpirun forwards it there)."""
    cmd = [*MPIRUN, "-n", str(n)]
    for k, v in (env or {}).items():
        cmd += ["-x", f"{k}={v}"]
    if preload:
        cmd += ["-x", f"LD_PRELOAD={build_dir / 'lib' / 'libcadmpi.so'}"]
    exe = program if isinstance(program, Path) else build_dir / "bin" / program
    cmd += [str(exe), *args]
    extra = {"input": stdin} if stdin is not None else {}
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=clean_env(), cwd=cwd, **extra)


def clean_env():
    """This process's environment without cadrt's and libcadmpi's settings:
    a job gets only what its test gives it."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("CADRT_", "CADMPI", "LD_PRELOAD"))}


def through(stderr):
    """Per rank: (collectives through cadrt, collectives left to MPI)."""
    return [tuple(map(int, m)) for m in re.findall(r"(\d+) collectives through cadrt, (\d+) left to MPI", stderr)]
