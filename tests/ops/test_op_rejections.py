"""Every construct outside the operator subset is rejected by `cadc op
check` with its own code at its line and column, and nothing else breaks:
one file per construct, the expected location and code, exit status 1 (a
negative status is a crash by a signal), within a timeout.

A case may carry options (a 6th item): "pre", lines put between HEAD and
the operator (includes, helpers, structs; the body's lines move down by as
many); "not", words no error may say (the wordings the issue complained
of); "needs", the work in progress it waits for (CAD_OP_PENDING=1 makes
it an expected failure).  line None: any line > 0; column None: not
checked; a tuple of lines or codes: one of them; code None: the file is
accepted (exit 0)."""

import json
import subprocess
from pathlib import Path

import pytest

from test_op_corpus import pending

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
    "other_call": (["\t*inout = sin(*in);"], 8, 11, "CAD-E053", "calls sin"),
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
    # endless loops, recursion
    "endless_while": (["\twhile (1)", "\t\t*inout = *in;"], 8, 2, "CAD-E055", "never ends",
                      {"not": "4096 iterations"}),
    "endless_while_flag": (["\tint go = 1;", "\twhile (go)", "\t\t*inout += 1;"], 9, 2, "CAD-E055", "never ends",
                           {"not": "4096 iterations"}),
    "mutual_recursion": (["\t*inout = ping(*in);"], 7, 39, "CAD-E053", "recursion",
                         {"pre": ["static double pong(double x);",
                                  "static double ping(double x) { return x > 1 ? pong(x / 2) : x; }",
                                  "static double pong(double x) { return ping(x - 1); }"]}),
    # libc and other calls
    "printf": (['\tprintf("%f\\n", *in);', "\t*inout = *in;"], 9, 2, "CAD-E053", "calls printf",
               {"pre": ["#include <stdio.h>"]}),
    "memcpy": (["\tdouble t;", "\tmemcpy(&t, in, sizeof t);", "\t*inout = t;"], 10, 2, "CAD-E053", "calls memcpy",
               {"pre": ["#include <string.h>"]}),
    "malloc": (["\t(void)malloc(8);", "\t*inout = *in;"], 9, 8, "CAD-E053", "calls malloc",
               {"pre": ["#include <stdlib.h>"]}),
    "alloca": (["\t(void)alloca(16);", "\t*inout = *in;"], 9, 8, ("CAD-E053", "CAD-E058"), "alloca",
               {"pre": ["#include <alloca.h>"]}),
    "setjmp": (["\tjmp_buf jb;", "\tif (setjmp(jb))", "\t\treturn;", "\t*inout = *in;"], 10, 6, "CAD-E053", "setjmp",
               {"pre": ["#include <setjmp.h>"]}),
    "function_pointer_call": (["\t*inout = (*in > 0 ? fabs : sqrt)(*in);"], 8, 11, "CAD-E053", "through a pointer"),
    "function_pointer_variable": (["\tdouble (*f)(double) = fabs;", "\t*inout = f(*in);"], 8, 11,
                                  ("CAD-E052", "CAD-E053"), "f"),
    "atomic_fence": (["\t__atomic_thread_fence(__ATOMIC_SEQ_CST);", "\t*inout = *in;"], 8, 2,
                     ("CAD-E053", "CAD-E059"), "__atomic_thread_fence"),
    "sync_builtin": (["\t__sync_synchronize();", "\t*inout = *in;"], 8, 2, ("CAD-E053", "CAD-E059"),
                     "__sync_synchronize"),
    "atomic_type": (["\t_Atomic double a = *in;", "\t*inout = a;"], 8, 17, ("CAD-E059", "CAD-E053"), "_Atomic"),
    # pointers
    "index_negative": (["\t*inout = in[-1];"], 8, 14, "CAD-E052", "element 0"),
    "int_to_pointer": (["\t*inout = *(const double *)0x1000;"], 8, 12, "CAD-E052", "pointer conversion"),
    # storage
    "thread_local_global": (["\t*inout = *in + tl;"], 9, 17, "CAD-E054", "the global tl",
                            {"pre": ["_Thread_local double tl;"]}),
    "thread_local_static": (["\tstatic _Thread_local double t;", "\t*inout = *in + t;"], 8, 30, "CAD-E054", "static"),
    "huge_local": (["\tdouble big[1 << 28];", "\tbig[0] = *in;", "\t*inout = big[0];"], 8, 9, "CAD-E060", ""),
    # volatile through a cast, asm
    "volatile_cast_store": (["\t*(volatile double *)inout = *in;"], 8, 3, "CAD-E056", "volatile"),
    "volatile_cast_load": (["\t*inout = *(const volatile double *)in;"], 8, 12, "CAD-E056", "volatile"),
    "asm_statement": (['\t__asm__("nop");', "\t*inout = *in;"], 8, 2, "CAD-E057", "assembly"),
    # reads before writes
    "uninitialised_field": (["\tstruct pt p;", "\tp.x = *in;", "\t*inout = p.x + p.y;"], 11, 17, "CAD-E061", "p.y",
                            {"pre": ["struct pt { double x, y; };"]}),
    # sizes: a located error, never a signal, fast
    "deep_unary_minus": (["\t*inout = " + "- " * 3000 + "*in;"], 8, None, ("CAD-E060", "CAD-E050"), ""),
    "deep_parentheses": (["\t*inout = " + "(" * 3000 + "*in" + ")" * 3000 + ";"], 8, None, ("CAD-E060", "CAD-E050"),
                         ""),
    "long_sum": (["\t*inout = " + "*in + " * 4999 + "*in;"], (6, 8), None, ("CAD-E060", "CAD-E050"), ""),
    "huge_empty_nested_loops": (["\tfor (int i = 0; i < 100000; i++)", "\t\tfor (int j = 0; j < 100000; j++)",
                                 "\t\t\t;", "\t*inout = *in;"], (8, 9), None, "CAD-E060", ""),
    "empty_nested_loops_over_budget": (["\tfor (int i = 0; i < 1000; i++)", "\t\tfor (int j = 0; j < 1000; j++)",
                                        "\t\t\t;", "\t*inout = *in;"], (8, 9), None, "CAD-E060", ""),
    # what must be accepted, and the wordings the issue complained of
    "double_counter_accepted": (["\tdouble acc = 0;", "\tfor (double t = 0.0; t < 1.0; t += 0.25)",
                                 "\t\tacc += *in;", "\t*inout = acc;"], None, None, None, "",
                                {"not": "depends on the data"}),
    "infinity_accepted": (["\t*inout = *in < INFINITY ? *in : 0;"], None, None, None, "",
                          {"not": "__builtin_inff"}),
    "nan_huge_val_accepted": (["\t*inout = *in < HUGE_VAL ? *in : NAN;"], None, None, None, "",
                              {"not": "__builtin"}),
    # clang stops after 20 errors with an error of no location: every error has a line
    "many_errors": ([f"\t*inout = *in + nothing{k};" for k in range(25)], 8, 17, "CAD-E050", "undeclared identifier"),
    "struct_conditional_accepted": (["\tstruct pt a = { *in, 0 }, b = { *inout, 1 };",
                                     "\tstruct pt c = *in > 0 ? a : b;", "\t*inout = c.x;"], None, None, None, "",
                                    {"pre": ["struct pt { double x, y; };"], "not": "not a place"}),
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


def check(build_dir, tmp_path, text, timeout=60):
    f = tmp_path / "op.c"
    f.write_text(text)
    r = subprocess.run([str(build_dir / "bin" / "cadc"), "op", "check", "--json", "-I", str(OPS), str(f)],
                       capture_output=True, text=True, timeout=timeout)
    return r, json.loads(r.stdout) if r.stdout.strip() else {}


def _options(name):
    return CASES[name][5] if len(CASES[name]) > 5 else {}


def _case_params():
    needs = {n: (_options(n)["needs"], "see the case") for n in CASES if "needs" in _options(n)}
    out = []
    for n in CASES:
        mark = pending(n, needs)
        out.append(pytest.param(n, id=n, marks=[mark] if mark else []))
    return out


def _one_of(want, got):
    return want == got or (isinstance(want, tuple) and got in want)


@pytest.mark.parametrize("name", _case_params())
def test_forbidden_construct(build_dir, tmp_path, name):
    body, line, col, code, words = CASES[name][:5]
    opts = _options(name)
    pre = "".join(p + "\n" for p in opts.get("pre", []))
    r, doc = check(build_dir, tmp_path, HEAD + pre + SIG + "\n".join(body) + "\n}\n", timeout=20)
    assert r.returncode >= 0, f"cadc died of signal {-r.returncode}: {r.stderr[-2000:]}"
    errors = [d for d in doc.get("diagnostics", []) if d["severity"] == "error"]
    for bad in [opts["not"]] if "not" in opts else []:
        assert not [e for e in errors if bad in e["message"]], json.dumps(errors, indent=1)
    if code is None:
        assert r.returncode == 0 and not errors, r.stdout + r.stderr
        return
    assert r.returncode == 1, r.stdout + r.stderr
    first = errors[0]
    got_line, got_col = first["location"].get("line"), first["location"].get("column")
    assert _one_of(code, first["code"]) and words in first["message"], json.dumps(errors, indent=1)
    assert (got_line or 0) > 0 and (line is None or _one_of(line, got_line)), json.dumps(errors, indent=1)
    assert col is None or got_col == col, json.dumps(errors, indent=1)
    assert all((e["location"].get("line") or 0) > 0 for e in errors), json.dumps(errors, indent=1)


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
    f.write_text(HEAD + SIG + "\t*inout = sin(*in);\n}\n")
    r = subprocess.run([str(build_dir / "bin" / "cadc"), "op", "check", "-I", str(OPS), str(f)],
                       capture_output=True, text=True)
    assert r.returncode == 1
    assert f"{f}:8:11: error: calls sin" in r.stderr and "[CAD-E053]" in r.stderr
    assert "*inout = sin(*in);" in r.stderr and "^" in r.stderr, r.stderr
    assert "generated" not in r.stderr, r.stderr   # clang's own summary is not printed
