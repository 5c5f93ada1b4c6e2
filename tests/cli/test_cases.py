"""cadc end to end, data-driven: every file in cases/ says how to run cadc
on it and which diagnostics to expect, inline.

In a .cad file:
    # cadc: verify --ranks 2 --sizes 3      the command (default: check);
                                             the file goes last, or at {file}
    # exit: 2                                the exit code (default: 1 if any
                                             error is expected, else 0)
    # stderr: "cannot read"                  a fragment of stderr (exit 2 cases)
    send buf to 7  # expect: CAD-E024 col 17 "sends to rank 7"
                                             an error (CAD-W...: a warning) on
                                             this line: code, optionally the
                                             column, a fragment of the message
In a .json file (the JSON form has no comments of its own), the same
directives are the strings of its top-level "comments" array, with the
location a JSON pointer: "expect: CAD-E011 at /algorithms/0/body/0 \"...\"".
Every expected error and warning must appear, and no other.
"""

import json
import re
import shlex
import subprocess
from pathlib import Path

import pytest

CASES = sorted((Path(__file__).parent / "cases").glob("*.*"))
EXPECT = re.compile(r'expect:\s*(CAD-[EW]\d{3})(?:\s+col\s+(\d+))?(?:\s+at\s+(\S+))?\s*(?:"(.*)")?\s*$')


def directives(path: Path):
    """(command, exit, stderr fragments, expectations) of a case file."""
    command, exit_code, stderr, expects = "check", None, [], []
    if path.suffix == ".json":
        try:
            lines = [(None, c) for c in json.loads(path.read_text()).get("comments", [])]
        except ValueError:  # a syntax error case: directives in leading '//' lines
            lines = [(None, l[2:].strip()) for l in path.read_text().splitlines() if l.startswith("//")]
    else:
        lines = []
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            if "#" in line:
                lines.append((number, line[line.index("#") + 1:].strip()))
    for number, text in lines:
        if text.startswith("cadc:"):
            command = text[5:].strip()
        elif text.startswith("exit:"):
            exit_code = int(text[5:])
        elif text.startswith("stderr:"):
            stderr.append(text[7:].strip().strip('"'))
        elif text.startswith("expect:"):
            m = EXPECT.match(text)
            assert m, f"{path.name}: bad expectation: {text}"
            code, col, pointer, fragment = m.groups()
            expects.append({"code": code, "line": number, "col": int(col) if col else None,
                            "pointer": pointer, "fragment": fragment or ""})
    if exit_code is None:
        exit_code = 1 if any(e["code"].startswith("CAD-E") for e in expects) else 0
    return command, exit_code, stderr, expects


def matches(diag, e):
    loc = diag.get("location", {})
    return (diag["code"] == e["code"] and e["fragment"] in diag["message"]
            and (e["line"] is None or loc.get("line") == e["line"])
            and (e["col"] is None or loc.get("column") == e["col"])
            and (e["pointer"] is None or loc.get("pointer") == e["pointer"]))


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case(case, build_dir):
    command, exit_code, stderr_frags, expects = directives(case)
    args = shlex.split(command)
    args = [str(case) if a == "{file}" else a for a in args]
    if str(case) not in args:
        args.append(str(case))
    wants_json = args[0] in ("check", "verify", "compile") and exit_code != 2
    if wants_json:
        args.insert(1, "--json")
    run = subprocess.run([str(build_dir / "bin" / "cadc")] + args, capture_output=True, text=True,
                         timeout=300, cwd=case.parent)
    detail = f"cadc {' '.join(args)}\nexit {run.returncode}\nstdout:\n{run.stdout[-3000:]}\nstderr:\n{run.stderr[-3000:]}"
    assert run.returncode == exit_code, detail
    for frag in stderr_frags:
        assert frag in run.stderr, detail
    if not wants_json:
        return
    diags = json.loads(run.stdout)["diagnostics"]
    found = [d for d in diags if d["severity"] in ("error", "warning")]
    for e in expects:
        assert any(matches(d, e) for d in found), f"missing {e}\n{detail}"
    for d in found:
        assert any(matches(d, e) for e in expects), f"unexpected {d}\n{detail}"
