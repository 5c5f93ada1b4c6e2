"""Algorithms that name operators in `reduce ... op NAME`, and the verifier
and selection taking the op into account:
  - a reduction with another op than the call's is a wrong result (E036);
  - an algorithm may name a user-defined operator (cadc --ops, or the
    library's ops/); it is then written for that operator: verified with
    it (commutative or not as declared), selected only for calls with it;
  - `cadc verify --op NAME --ops FILE` takes a user-defined operator's
    declared commutativity;
  - rules may select by op ("op": NAME), and the runtime follows them
    (uop_select.c under cadrun)."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ALGS = ROOT / "algorithms"
OPS = ALGS / "ops"
RD = (ALGS / "allreduce_recursive_doubling.cad").read_text()


def cadc(build_dir, *args):
    return subprocess.run([str(build_dir / "bin" / "cadc"), *map(str, args)], capture_output=True, text=True,
                          timeout=300)


def variant(tmp_path, name, text):
    """The recursive-doubling allreduce renamed, with text edits applied."""
    body = RD.replace("algorithm allreduce_recursive_doubling", "algorithm " + name)
    for old, new in text:
        assert old in body, old
        body = body.replace(old, new)
    p = tmp_path / (name + ".cad")
    p.write_text(body)
    return p


LOWER = "      if dst < rank {\n        reduce recvbuf from tmp\n"
UPPER = "        reduce tmp from recvbuf\n"
FOLD = "      recv tmp from rank - 1\n      reduce recvbuf from tmp\n"


def named(op):
    return [(LOWER, LOWER.replace("from tmp\n", "from tmp op %s\n" % op)),
            (UPPER, UPPER.replace("from recvbuf\n", "from recvbuf op %s\n" % op)),
            (FOLD, FOLD.replace("from tmp\n", "from tmp op %s\n" % op))]


def line_of(path, text):
    return next(i + 1 for i, l in enumerate(path.read_text().splitlines()) if text in l)


def test_a_reduction_with_a_fixed_op_is_caught_at_its_line(build_dir, tmp_path):
    """An allreduce reduces with the call's op, whatever it is: a fixed one
    is an error where it is written, unless the algorithm declares it is
    written for that op (then it verifies with it, and takes no other)."""
    p = variant(tmp_path, "ar_max", [(LOWER, LOWER.replace("from tmp\n", "from tmp op max\n"))])
    r = cadc(build_dir, "check", p, "--json")
    assert r.returncode == 1, r.stdout + r.stderr
    d = json.loads(r.stdout)["diagnostics"][0]
    assert d["code"] == "CAD-E014" and d["location"]["line"] == line_of(p, "from tmp op max"), d
    assert "reduces with the call's op, whatever it is" in d["message"] and "declare 'op max'" in d["message"], d
    q = variant(tmp_path, "ar_for_max", named("max") + [("  inplace\n", "  inplace\n  op max\n")])
    r = cadc(build_dir, "verify", q, "--ranks", "1..9", "--sizes", "0,3", "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    res = json.loads(r.stdout)["results"][0]
    assert res["verified"] > 0 and res["failed"] == 0, res
    r = cadc(build_dir, "verify", q, "--ranks", "4", "--sizes", "3", "--op", "sum")
    assert r.returncode == 2 and "written for the op max: give --op max or no --op" in r.stderr, r.stderr


def test_an_algorithm_written_for_a_user_op_verifies_with_it(build_dir, tmp_path):
    p = variant(tmp_path, "allreduce_cmul", named("complex_mul"))
    r = cadc(build_dir, "verify", p, "--ops", OPS / "complex_mul.c", "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    res = json.loads(r.stdout)["results"][0]
    assert res["verified"] > 100 and res["failed"] == 0, res
    inst = res["instances"][0]["instance"]
    assert "op=complex_mul" in inst and "noncommutative" in inst, inst
    # compile writes the operator into every rank's program.
    out = tmp_path / "progs"
    r = cadc(build_dir, "compile", p, "--ops", OPS / "complex_mul.c", "--ranks", "3", "--size", "4", "-o", out)
    assert r.returncode == 0, r.stdout + r.stderr
    r = cadc(build_dir, "disasm", out / "allreduce_cmul.1.cadbc")
    assert r.returncode == 0 and "complex_mul" in r.stdout, r.stdout + r.stderr


def test_the_op_must_be_known_at_its_line(build_dir, tmp_path):
    p = variant(tmp_path, "allreduce_cmul", named("complex_mul"))
    r = cadc(build_dir, "check", p)
    assert r.returncode == 1
    line = line_of(p, "op complex_mul")
    assert f"{p}:{line}:" in r.stderr and "CAD-E" in r.stderr and "unknown op 'complex_mul'" in r.stderr, r.stderr
    assert "none loaded" in r.stderr, r.stderr
    r = cadc(build_dir, "check", p, "--ops", OPS / "maxloc.c")
    assert r.returncode == 1 and "user-defined: maxloc" in r.stderr, r.stderr
    r = cadc(build_dir, "check", p, "--ops", OPS / "complex_mul.c")
    assert r.returncode == 0, r.stderr


def test_an_algorithm_is_for_one_user_op(build_dir, tmp_path):
    p = variant(tmp_path, "two_ops", [(LOWER, LOWER.replace("from tmp\n", "from tmp op complex_mul\n")),
                                      (UPPER, UPPER.replace("from recvbuf\n", "from recvbuf op affine\n"))])
    r = cadc(build_dir, "check", p, "--ops", OPS / "complex_mul.c", "--ops", OPS / "affine.c", "--json")
    assert r.returncode == 1
    d = json.loads(r.stdout)["diagnostics"][0]
    assert d["location"]["line"] == line_of(p, "op affine"), d
    assert "a second user-defined operator, 'affine'" in d["message"], d
    assert d["notes"] and d["notes"][0]["location"]["line"] == line_of(p, "op complex_mul"), d


def test_usage_errors_of_user_ops(build_dir, tmp_path):
    p = variant(tmp_path, "allreduce_cmul", named("complex_mul"))
    ops = ["--ops", OPS / "complex_mul.c"]
    for extra, words in [(["--op", "sum"], "written for the op complex_mul"),
                         (["--op", "complex_mul", "--dtype", "f64"], "--dtype does not apply"),
                         (["--op", "nosuch"], "unknown --op 'nosuch'")]:
        r = cadc(build_dir, "verify", p, *ops, "--ranks", "2", *extra)
        assert r.returncode == 2 and words in r.stderr, (extra, r.stderr)
    r = cadc(build_dir, "compile", p, *ops, "--ranks", "2", "--noncommutative", "-o", tmp_path / "o")
    assert r.returncode == 2 and "declares whether it commutes" in r.stderr, r.stderr
    r = cadc(build_dir, "verify", p, "--ops", OPS / "complex_mul.c", "--ops", OPS / "complex_mul.c", "--ranks", "2")
    assert r.returncode == 2 and "a second operator named complex_mul" in r.stderr, r.stderr


def test_verify_takes_the_declared_commutativity(build_dir, tmp_path):
    # Always combining the partner's partial on the left is right only for
    # a commutative op.
    p = variant(tmp_path, "ar_any_order", [(
        "      if dst < rank {\n        reduce recvbuf from tmp\n      } else {\n        reduce tmp from recvbuf\n"
        "        copy recvbuf from tmp\n      }\n", "      reduce recvbuf from tmp\n")])
    r = cadc(build_dir, "verify", p, "--ops", OPS / "affine.c", "--op", "affine", "--ranks", "2..5", "--sizes", "2",
             "--json")
    assert r.returncode == 1, r.stdout
    doc = json.loads(r.stdout)
    assert doc["diagnostics"][0]["code"] == "CAD-E036" and "in rank order" in " ".join(doc["diagnostics"][0]["witness"])
    r = cadc(build_dir, "verify", p, "--ops", OPS / "maxloc.c", "--op", "maxloc", "--ranks", "1..9", "--sizes", "0,2")
    assert r.returncode == 0, r.stdout + r.stderr
    # A standard algorithm that requires a commutative op: skipped for affine.
    r = cadc(build_dir, "verify", ALGS / "allreduce_ring.cad", "--ops", OPS / "affine.c", "--op", "affine",
             "--ranks", "3", "--sizes", "6")
    assert r.returncode == 1 and "CAD-E038" in r.stderr, r.stdout + r.stderr
    r = cadc(build_dir, "verify", ALGS / "allreduce_ring.cad", "--ops", OPS / "maxloc.c", "--op", "maxloc",
             "--ranks", "1..6", "--sizes", "0,6")
    assert r.returncode == 0, r.stdout + r.stderr


def make_library_dir(tmp_path, rules):
    d = tmp_path / "lib"
    (d / "ops").mkdir(parents=True)
    variant(d, "allreduce_cmul", named("complex_mul"))
    shutil.copy(ALGS / "allreduce_recursive_doubling.cad", d)
    for f in ["complex_mul.c", "affine.c", "cad_op.h"]:
        shutil.copy(OPS / f, d / "ops")
    (d / "rules.json").write_text(json.dumps({"rules": rules}))
    return d


GOOD_RULES = [{"collective": "allreduce", "op": "complex_mul", "use": "allreduce_cmul"},
              {"collective": "allreduce", "use": "allreduce_recursive_doubling"}]


@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_rules_select_by_op_at_run_time(build_dir, tmp_path, n):
    d = make_library_dir(tmp_path, GOOD_RULES)
    lib = tmp_path / "t.cadlib"
    r = cadc(build_dir, "build", d, "-o", lib, "-j", "2")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "allreduce_cmul:" in r.stdout and "2 operators" in r.stdout, r.stdout
    r = subprocess.run([str(build_dir / "bin" / "cadrun"), "-n", str(n), "--timeout", "120",
                        str(build_dir / "bin" / "uop_select")], capture_output=True, text=True,
                       env={"CADRT_LIBRARY": str(lib), "CADRT_ENGINE": "poll", "PATH": "/usr/bin:/bin"}, timeout=180)
    assert r.returncode == 0 and "uop_select: ok" in r.stdout, r.stdout + r.stderr


@pytest.mark.parametrize("rules,words", [
    ([{"collective": "bcast", "op": "sum", "use": "allreduce_cmul"}] + GOOD_RULES, "a bcast has no op"),
    ([{"collective": "allreduce", "op": "nosuch", "use": "allreduce_cmul"}] + GOOD_RULES[1:],
     "neither a built-in op nor an operator of the library"),
    ([{"collective": "allreduce", "op": "affine", "use": "allreduce_cmul"}] + GOOD_RULES[1:],
     "written for the op complex_mul, not affine"),
    ([GOOD_RULES[1], {"collective": "allreduce", "use": "allreduce_cmul"}], "must take every op"),
    ([GOOD_RULES[1], {"collective": "allreduce", "op": "complex_mul", "use": "allreduce_cmul"}],
     "must have no conditions"),
])
def test_bad_op_rules(build_dir, tmp_path, rules, words):
    d = make_library_dir(tmp_path, rules)
    r = cadc(build_dir, "build", d, "-o", tmp_path / "t.cadlib", "-j", "2")
    assert r.returncode == 1 and words in r.stderr, r.stdout + r.stderr
    assert not (tmp_path / "t.cadlib").exists()
