"""Every construct outside the operator subset is rejected by `cadc op
check` with its own code at its line and column, and nothing else breaks:
one file per construct, the expected location and code, exit status 1."""

import json
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
OPS = ROOT / "algorithms" / "ops"
HEAD = '#include "cad_op.h"\n#include <math.h>\nint g;\ndouble helper(double x) { return x; }\n'
# HEAD is 4 lines; the marker is line 5, the signature 6, the body starts on line 8.
SIG = "CAD_OP(commutative)\nvoid op(const double *in, double *inout)\n{\n"

CASES = {
    # name: (body lines, line, column, code, words in the message)
    "pointer_local": (["\tdouble *p = inout;", "\t*inout = *in;"], 8, 10, "CAD-E052", "pointer variable p"),
    "address_of": (["\tdouble x = *in;", "\t*inout = *(&x);"], 9, 13, "CAD-E052", "address"),
    "pointer_arith": (["\t*inout = *(in + 1);"], 8, 16, "CAD-E052", "pointer arithmetic"),
    "index_beyond_element": (["\t*inout = in[1];"], 8, 14, "CAD-E052", "element 0"),
    "pointer_as_value": (["\tdouble d = (double)(long)in;", "\t*inout = d;"], 8, 21, "CAD-E052", "pointer conversion"),
    "other_call": (["\t*inout = helper(*in);"], 8, 11, "CAD-E053", "calls helper"),
    "recursion": (["\top(in, inout);"], 8, 2, "CAD-E053", "recursion"),
    "global": (["\t*inout = *in + g;"], 8, 17, "CAD-E054", "the global g"),
    "static_local": (["\tstatic double s;", "\t*inout = *in + s;"], 8, 16, "CAD-E054", "static"),
    "unbounded_loop": (["\twhile (*inout > 1)", "\t\t*inout = *inout / 2;"], 8, 9, "CAD-E055", "constant bound"),
    "endless_for": (["\tfor (;;)", "\t\t*inout = *in;"], 8, 2, "CAD-E055", "never ends"),
    "volatile": (["\tvolatile double v = *in;", "\t*inout = v;"], 8, 18, "CAD-E056", "volatile"),
    "inline_asm": (['\t__asm__ volatile("" ::: "memory");', "\t*inout = *in;"], 8, 2, "CAD-E057", "assembly"),
    "vla": (["\tint n = (int)*in & 7;", "\tdouble a[n + 1];", "\ta[0] = *in;", "\t*inout = a[0];"], 9, 9, "CAD-E058",
            "variable-length"),
    "goto": (["\tgoto end;", "end:", "\t*inout = *in;"], 8, 2, "CAD-E059", "goto"),
    "switch": (["\tswitch ((int)*in) { case 1: *inout = 1; break; default: break; }"], 8, 2, "CAD-E059", "switch"),
    "break": (["\tfor (int k = 0; k < 3; k++) {", "\t\tif (k == 1) break;", "\t\t*inout += *in;", "\t}"], 9, 15,
              "CAD-E059", "break"),
    "string": (['\t*inout = *in + "ab"[1];'], 8, 17, "CAD-E059", "string literals"),
    "data_dependent_index": (["\tdouble a[2] = {1, 2};", "\t*inout = a[(int)*in & 1];"], 9, 13, "CAD-E059",
                             "not a constant"),
    "uninitialised": (["\tdouble x;", "\tif (*in > 0) x = 1;", "\t*inout = x;"], 10, 11, "CAD-E061", "x may be read"),
    "assignment_in_condition": (["\tdouble x = 0;", "\t*inout = *in > 0 ? (x = 1) : 2;"], 9, 22, "CAD-E059",
                                "inside ?:"),
    "huge_loop": (["\tfor (int k = 0; k < 100000; k++)", "\t\t*inout += *in;"], 8, 2, "CAD-E060", "4096 iterations"),
    "long_double": (["\tlong double x = *in;", "\t*inout = (double)x;"], 8, 14, "CAD-E059", "long double"),
    "c_error": (["\t*inout = *in + nothing;"], 8, 17, "CAD-E050", "undeclared identifier"),
    "return_value": (["\treturn 1;"], 8, 2, "CAD-E050", "should not return a value"),
}

SIGNATURES = {
    "bad_marker": ("CAD_OP(sometimes)\nvoid op(const double *in, double *inout) { *inout = *in; }\n", 5, 1, "CAD-E051",
                   "commutative or noncommutative"),
    "three_params": ("CAD_OP(commutative)\nvoid op(const double *in, double *inout, int n) { }\n", 6, 6, "CAD-E051",
                     "void op(const T *in, T *inout)"),
    "in_not_const": ("CAD_OP(commutative)\nvoid op(double *in, double *inout) { *inout = *in; }\n", 6, 17, "CAD-E051",
                     "const T"),
    "types_differ": ("CAD_OP(commutative)\nvoid op(const double *in, float *inout) { }\n", 6, 23, "CAD-E051",
                     "same T"),
    "union_element": ("union u { double d; long l; };\nCAD_OP(commutative)\nvoid op(const union u *in, union u *inout) { }\n",
                      7, 37, "CAD-E051", "union"),
    "pointer_field": ("struct s { double *p; };\nCAD_OP(commutative)\nvoid op(const struct s *in, struct s *inout) { }\n",
                      7, 39, "CAD-E051", "pointer"),
    "too_big": ("struct s { double v[40]; };\nCAD_OP(commutative)\nvoid op(const struct s *in, struct s *inout) { }\n",
                7, 39, "CAD-E051", "at most 256"),
    "two_with_one_name": ("CAD_OP(commutative)\nvoid op(const double *in, double *inout);\n"
                          "CAD_OP(commutative)\nvoid op(const double *in, double *inout) { *inout = *in; }\n", None,
                          None, None, None),
    "no_operator": ("void op(const double *in, double *inout) { *inout = *in; }\n", 1, 1, "CAD-E062",
                    "no operator in this file"),
}


def check(build_dir, tmp_path, text):
    f = tmp_path / "op.c"
    f.write_text(text)
    r = subprocess.run([str(build_dir / "bin" / "cadc"), "op", "check", "--json", "-I", str(OPS), str(f)],
                       capture_output=True, text=True, timeout=60)
    return r, json.loads(r.stdout) if r.stdout.strip() else {}


@pytest.mark.parametrize("name", CASES)
def test_forbidden_construct(build_dir, tmp_path, name):
    body, line, col, code, words = CASES[name]
    r, doc = check(build_dir, tmp_path, HEAD + SIG + "\n".join(body) + "\n}\n")
    assert r.returncode == 1, r.stdout + r.stderr
    errors = [d for d in doc["diagnostics"] if d["severity"] == "error"]
    first = errors[0]
    got = (first["location"].get("line"), first["location"].get("column"), first["code"])
    assert got == (line, col, code) and words in first["message"], json.dumps(errors, indent=1)


@pytest.mark.parametrize("name", SIGNATURES)
def test_bad_signature(build_dir, tmp_path, name):
    text, line, col, code, words = SIGNATURES[name]
    r, doc = check(build_dir, tmp_path, HEAD + text)
    if line is None:   # a declaration and its definition are one operator
        assert r.returncode == 0, r.stdout + r.stderr
        assert [o["name"] for o in doc["ops"]] == ["op"]
        return
    assert r.returncode == 1, r.stdout + r.stderr
    first = [d for d in doc["diagnostics"] if d["severity"] == "error"][0]
    got = (first["location"].get("line"), first["location"].get("column"), first["code"])
    assert got == (line, col, code) and words in first["message"], json.dumps(doc, indent=1)


def test_text_form_quotes_the_line(build_dir, tmp_path):
    f = tmp_path / "op.c"
    f.write_text(HEAD + SIG + "\t*inout = helper(*in);\n}\n")
    r = subprocess.run([str(build_dir / "bin" / "cadc"), "op", "check", "-I", str(OPS), str(f)],
                       capture_output=True, text=True)
    assert r.returncode == 1
    assert f"{f}:8:11: error: calls helper" in r.stderr and "[CAD-E053]" in r.stderr
    assert "*inout = helper(*in);" in r.stderr and "^" in r.stderr, r.stderr
    assert "generated" not in r.stderr, r.stderr   # clang's own summary is not printed
