"""cadc build on the folders of libraries/: each a library whose rules
meet (or overstep) the domains its algorithms' proofs cover.  The
expected diagnostics are in the comment of its rules.json, as
    expect: CAD-E040 "a fragment of the message"
(several allowed); a folder without an expected error must build.  Every
expected diagnostic must appear, and no other error or warning.  The
rules are checked before any proof: a library refused for its rules
verifies nothing first."""

import json
import re
import subprocess
from pathlib import Path

import pytest

LIBRARIES = sorted(p for p in (Path(__file__).parent / "libraries").iterdir() if p.is_dir())
EXPECT = re.compile(r'expect:\s*(CAD-[EW]\d{3})\s*"((?:[^"\\]|\\.)*)"')


def expectations(folder: Path):
    comment = json.loads((folder / "rules.json").read_text()).get("comment", "")
    return [(code, fragment.replace('\\"', '"')) for code, fragment in EXPECT.findall(comment)]


def build(build_dir, folder, out, *extra):
    return subprocess.run([str(build_dir / "bin" / "cadc"), "build", *extra, str(folder), "-o", str(out), "-j", "2"],
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("folder", LIBRARIES, ids=[p.name for p in LIBRARIES])
def test_library(build_dir, tmp_path, folder):
    expects = expectations(folder)
    out = tmp_path / "lib.cadlib"
    run = build(build_dir, folder, out, "--json")
    detail = f"exit {run.returncode}\nstdout:\n{run.stdout[-3000:]}\nstderr:\n{run.stderr[-3000:]}"
    errors_expected = any(code.startswith("CAD-E") for code, _ in expects)
    assert run.returncode == (1 if errors_expected else 0), detail
    assert out.exists() != errors_expected, detail
    found = [d for d in json.loads(run.stdout)["diagnostics"] if d["severity"] in ("error", "warning")]
    for code, fragment in expects:
        assert any(d["code"] == code and fragment in d["message"] for d in found), f"missing {code} {fragment}\n{detail}"
    for d in found:
        assert any(d["code"] == code and fragment in d["message"] for code, fragment in expects), \
            f"unexpected {d}\n{detail}"
    if errors_expected and all(d["code"] == "CAD-E040" for d in found):
        # Refused for its rules alone: before a single proof.
        text = build(build_dir, folder, tmp_path / "again.cadlib")
        assert "instances verified" not in text.stdout, text.stdout


def test_built_library_records_its_domains(build_dir, tmp_path):
    """What ranks_ok's proofs cover, as the .cadlib records it."""
    out = tmp_path / "lib.cadlib"
    assert build(build_dir, Path(__file__).parent / "libraries" / "ranks_ok", out).returncode == 0
    doc = json.loads(out.read_text())
    proven = {a["name"]: a["proven"] for a in doc["algorithms"]}
    wrong = proven["bcast_wrong_from_4"]
    assert wrong["ranks"] == "1..3" and wrong["roots"] == "0" and wrong["inplace"] == [False]
    assert wrong["esize"] == "any" and wrong["topologies"] == "any" and wrong["op"] == "any"
    assert wrong["sizes"] == [0, 1, 5] and wrong["instances"] > 0
    assert proven["bcast_linear"]["ranks"] == "1..8" and proven["bcast_linear"]["roots"] == "all"
    assert doc["rules"]["rules"][1]["proof"] == "online"


def cadc(build_dir, *args):
    return subprocess.run([str(build_dir / "bin" / "cadc"), *map(str, args)], capture_output=True, text=True,
                          timeout=300)


@pytest.fixture(scope="module")
def ranks_ok(build_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("ranks_ok") / "lib.cadlib"
    assert build(build_dir, Path(__file__).parent / "libraries" / "ranks_ok", out).returncode == 0
    return out


def test_lib_show(build_dir, ranks_ok, tmp_path):
    run = cadc(build_dir, "lib", "show", ranks_ok)
    assert run.returncode == 0, run.stderr
    out = run.stdout
    assert "bcast_wrong_from_4 (bcast), proven for:\n  P 1..3\n  roots 0\n" in out, out
    assert "  element sizes: any (the program does not read esize)\n" in out, out
    assert "  /rules/1 bcast P=4..8: bcast_wrong_from_4 (beyond its domain: proven on arrival)\n" in out, out
    doc = json.loads(cadc(build_dir, "lib", "show", "--json", ranks_ok).stdout)
    assert [a["name"] for a in doc["algorithms"]] == ["bcast_linear", "bcast_wrong_from_4"]
    assert doc["algorithms"][1]["proven"]["ranks"] == "1..3" and doc["rules"][1]["online"] is True
    # Not a library, and one of the format before domains: said so.
    bad = tmp_path / "bad.cadlib"
    bad.write_text("{}")
    run = cadc(build_dir, "lib", "show", bad)
    assert run.returncode == 1 and "not a valid library" in run.stderr, run.stderr
    old = json.loads(ranks_ok.read_text())
    old["cadlib"] = 1
    bad.write_text(json.dumps(old))
    run = cadc(build_dir, "lib", "show", bad)
    assert run.returncode == 1 and "rebuild it with cadc build" in run.stderr, run.stderr


def test_select_shows_the_gate(build_dir, ranks_ok):
    run = cadc(build_dir, "select", ranks_ok, "bcast", "--ranks", "3,4", "--sizes", "10")
    assert run.returncode == 0, run.stderr
    assert run.stdout == ("bcast P=3 n=10 root=0 (40 B): bcast_wrong_from_4\n"
                          "bcast P=4 n=10 root=0 (40 B): bcast_wrong_from_4 (outside its proven domain (P=4 is "
                          "beyond the proven 1..3): the runtime proves it on arrival)\n"), run.stdout
    # Proven as the runtime would: wrong from P = 4 on, the next rule's.
    run = cadc(build_dir, "select", ranks_ok, "bcast", "--ranks", "4", "--sizes", "10", "--prove", "--explain")
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("bcast P=4 n=10 root=0 (40 B): bcast_linear\n"), run.stdout
    assert ("/rules/1 bcast_wrong_from_4: outside its proven domain (P=4 is beyond the proven 1..3), and it does not "
            "verify there: bcast_wrong_from_4.cad:") in run.stdout, run.stdout
