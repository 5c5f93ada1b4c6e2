"""The standard library's algorithms (algorithms/*.cad) for the tests
that force each in turn: the runtime's matrices on the host
(tests/rt) and in the kernel engine (tests/kmod), through
`rt_check --algorithms`, and the MPI suite's."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ALGORITHMS = sorted(ROOT.glob("algorithms/*.cad"))


def collective_of(path: Path) -> str:
    m = re.search(r"^algorithm\s+\w+\s*:\s*(\w+)", path.read_text(), re.M)
    assert m, path
    return m.group(1)


def every_algorithm() -> str:
    """rt_check --algorithms's argument: COLL=NAME for every algorithm."""
    return ",".join(f"{collective_of(alg)}={alg.stem}" for alg in ALGORITHMS)


def algorithm_result(output: str, name: str, where: str) -> tuple[str, str]:
    """What an `rt_check --algorithms` job said of the algorithm name:
    ("ok" or "does not apply to this P", the engine).  Rank 0 prints each
    result, and a rank whose checks failed its FAILED: either, or no line
    at all (the job ended before it), fails the test."""
    assert f"algorithm {name}: FAILED" not in output, f"{where}:\n{output}"
    m = re.search(rf"^rt_check: algorithm {name}: (.*) \(engine (\w+)\)$", output, re.M)
    assert m, f"{where}: no result for {name} (the job ended before it?):\n{output}"
    return m.group(1), m.group(2)
