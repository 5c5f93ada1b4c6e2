"""What gcc makes of the interpreter's hottest loops, where a slip costs
half the speed silently and no result changes (the benchmarks would show
it, but nobody reads every figure of every run)."""

import re
import subprocess

import pytest


def function_text(objdump: str, name: str) -> str:
    """The disassembly of function name (or its clones, name.constprop.0...)."""
    parts = re.split(r"\n(?=[0-9a-f]+ <)", objdump)
    return "\n".join(p for p in parts if re.match(r"[0-9a-f]+ <" + re.escape(name) + r"(\.[a-z0-9.]+)?>:", p))


@pytest.mark.parametrize("obj", ["lib/libcadcore.a", "kmod/cad.ko"])
def test_an_f64_compare_that_picks_an_operand_runs_as_maxpd_and_minpd(build_dir, obj):
    """FLT then a SEL of its operands (MAX and MIN over doubles as cadc
    writes them) runs, with all strides 8, as gcc's maxpd / minpd: exact
    for a < b ? b : a, NaNs and signed zeros included.  A loop that selects
    integer loads instead becomes a compare and three logical operations,
    at about half the speed."""
    path = build_dir / obj
    assert path.exists(), f"{path} is not built"
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(path)], capture_output=True, text=True,
                         check=True).stdout
    text = function_text(out, "b_FLT")
    assert text, f"no b_FLT in {obj}"
    assert "maxpd" in text and "minpd" in text, f"b_FLT in {obj} has no maxpd/minpd"
