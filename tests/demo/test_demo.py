"""`make demo` runs demo/demo.sh, which ends with core_demo: each must do
what it says it does."""

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_core_demo_runs_and_checks_itself(build_dir):
    run = subprocess.run([str(build_dir / "bin" / "core_demo")], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    out = run.stdout
    assert "every rank holds the root's 65536 bytes" in out
    # The verifier's rejection names the node and the line that generated it.
    assert "node 3 (demo/core_demo.c:" in out
    assert "is outside buffer 0 'data' of 65536 bytes" in out
    assert "in rank order" in out
    assert out.rstrip().endswith("core_demo: all checks passed")


def test_demo_script_shows_the_compiler_and_the_core(build_dir):
    run = subprocess.run([str(ROOT / "demo" / "demo.sh"), str(build_dir)], capture_output=True,
                         text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    out = run.stdout
    assert "bcast_chain_pipeline: 38525 instances verified, 0 skipped, 0 failed" in out
    assert "wrote 4 programs (P=4 n=100 root=0 seg=32)" in out
    assert "node 7 send b0[384:400] -> rank 2 tag 3   ; algorithms/bcast_chain_pipeline.cad:24:7" in out
    # The bug, located, with its instance and witness.
    assert "demo/bcast_forgets_last.cad:5:1: error: wrong result: rank 2's buf[0:1] is wrong [CAD-E036]" in out
    assert "in instance P=3 n=1 root=0, rank 2" in out
    assert "no operation wrote it" in out
    assert "the round trip gives back the canonical text, byte for byte" in out
    assert "engine kernel" in out and "pinned pages, live objects: 0 0" in out
    assert out.rstrip().endswith("demo: all steps did what they say")
