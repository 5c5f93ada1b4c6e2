"""User-defined operators through cadrt on the user-space engines: the
standard library's operators looked up by name (and one from a .cadop file)
in allreduce, reduce at every root, reduce_scatter_block and a persistent
allreduce, checked against the operators applied in rank order in C
(uop_check.c).  The kernel engine runs the same program in
test_kernel_ops.py."""

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("engine", ["poll", "thread", "signal"])
@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_user_ops_in_collectives(build_dir, engine, n):
    r = subprocess.run([str(build_dir / "bin" / "cadrun"), "-n", str(n), "--timeout", "120",
                        str(build_dir / "bin" / "uop_check")],
                       capture_output=True, text=True, env={"CADRT_ENGINE": engine, "PATH": "/usr/bin:/bin"},
                       timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"uop_check: ok" in r.stdout and f"engine {engine}" in r.stdout, r.stdout


def test_user_op_from_a_cadop_file(build_dir, tmp_path):
    cadop = tmp_path / "maxloc.cadop"
    subprocess.run([str(build_dir / "bin" / "cadc"), "op", "compile", str(ROOT / "algorithms" / "ops" / "maxloc.c"),
                    "-o", str(cadop)], check=True)
    r = subprocess.run([str(build_dir / "bin" / "cadrun"), "-n", "3", str(build_dir / "bin" / "uop_check"), str(cadop)],
                       capture_output=True, text=True, env={"CADRT_ENGINE": "poll"}, timeout=180)
    assert r.returncode == 0 and "uop_check: ok" in r.stdout, r.stdout + r.stderr


def test_library_packs_the_operators(build_dir):
    import json
    doc = json.loads((build_dir / "lib" / "cad-std.cadlib").read_text())
    names = sorted(o["name"] for o in doc["ops"])
    assert names == sorted(p.stem for p in (ROOT / "algorithms" / "ops").glob("*.c")), names
    for o in doc["ops"]:
        assert o["code"] and o["code"][-1][0] == 0  # ends with exit
