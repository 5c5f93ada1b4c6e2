"""`make demo` runs core_demo: it must do what it says it does."""

import subprocess


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
