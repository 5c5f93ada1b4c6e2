#!/usr/bin/python3
"""A source fuzzer for the operator front end (`cadc op`).

Takes the operators of tests/ops/corpus/ and algorithms/ops/ and mutates
their C text with a small grammar-aware engine -- swap operators, duplicate,
delete and swap statements, nest an expression deeply (parentheses, unary
minus, long sums), wrap a statement in a loop with a random bound, insert a
forbidden construct, rename a helper to a builtin's name, put in random
constants (huge ones too), truncate -- one to three mutations a mutant.
Each mutant goes through `cadc op check --json` with a timeout.  Findings:

- the exit status is neither 0 nor 1 (a negative one is a signal: a crash);
- the timeout;
- stdout is not one JSON document;
- an error without a line (> 0), for a mutant of a file cadc accepts;
- with exit 0: `cadc op compile` fails, or op_tool cannot run the op on a
  few elements; with --gcc, also gcc's result differs (loosely: both NaN is
  equal, as test_ops.differs) where gcc builds the mutant and it runs --
  not for mutants of the corpus files that wait for other work
  (test_op_corpus.NEEDS: their own tests say why they differ).

With CAD_OP_PENDING=1 the findings the front end's work in progress is
to fix (KNOWN) are printed as known and do not count.

Deterministic for a seed: mutant i comes from Random(f"{seed}:{i}"), so
`--only i` replays one.  Bounded by SECONDS.  Findings go to
BUILD/fuzz_op/crashes/<kind>-<hash>.c (the reason in a comment at the top)
and are printed; the exit status is 1 if there were any.

    tests/ops/fuzz_op_source.py BUILD SECONDS [--seed N] [--gcc] [--only I]
"""

import argparse
import hashlib
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OPS = ROOT / "algorithms" / "ops"
SEEDS = sorted((ROOT / "tests" / "ops" / "corpus").glob("*.c")) + sorted(OPS.glob("*.c"))
TIMEOUT = 20
# (kind, words of the reason): findings of work in progress.
KNOWN = [("unlocated", "too many errors emitted")]

BINOPS = ["+", "-", "*", "/", "%", "&", "|", "^", "<<", ">>", "<", ">", "<=", ">=", "==", "!=", "&&", "||"]
_BINOP_RE = re.compile(r"(?<=[\w)\]] )(<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%&|^<>])(?= [\w(*!~-])")
_NUMBER_RE = re.compile(r"(?<![\w.])(\d+\.\d*(?:[eE][-+]?\d+)?f?|\d+[uUlL]*|0x[0-9a-fA-F]+[uUlL]*)(?![\w.])")
_HELPER_RE = re.compile(r"^(?:static\s+)?(?:inline\s+)?[\w ]+?\b(\w+)\s*\([^;{]*\)\s*$", re.M)
CONSTANTS = ["0", "1", "-1", "2147483647", "2147483648", "-2147483648", "4294967295u", "9223372036854775807",
             "18446744073709551615u", "1e308", "1e400", "-0.0", "0x1p-1074", "3.4e38f", "1e39f", "(1 << 30)",
             "(1ull << 63)", "0.1", "4096", "4097", "65536", "1000000000"]
BUILTIN_NAMES = ["fabs", "sqrt", "fmax", "fmin", "fabsf", "sqrtf", "fmaxf", "isnan", "isinf", "printf", "memcpy",
                 "abs", "floor"]
FORBIDDEN = [
    "while (1) {{ }}", "for (;;) {{ }}", "goto fz_end; fz_end: ;", "static double fz_s = 0; (void)fz_s;",
    "volatile double fz_v = 0; (void)fz_v;", '__asm__ volatile("" ::: "memory");', "(void)printf(\"x\");",
    "double *fz_p = 0; (void)fz_p;", "double fz_a[(int)2]; fz_a[0] = 0; (void)fz_a;",
    "int fz_n = 3; double fz_vla[fz_n]; (void)fz_vla;", "{name}(in, inout);", "__sync_synchronize();",
    "_Atomic int fz_at = 0; (void)fz_at;", "switch (1) {{ default: break; }}", "double fz_u; (void)(fz_u + 1);",
    "long double fz_ld = 1; (void)fz_ld;", "(void)__builtin_alloca(8);", "double fz_big[1 << 26]; (void)fz_big;",
    "for (int fz_i = 0; fz_i < 100000; fz_i++) for (int fz_j = 0; fz_j < 100000; fz_j++) ;",
    "for (double fz_t = 0; fz_t < 2; fz_t += 0.5) {{ }}", "(void)(*(volatile const char *)in);",
]
FORBIDDEN_TOP = ["int fz_global;", "_Thread_local int fz_tl;", "static int fz_rec(int x) { return x ? fz_rec(x - 1) : 0; }",
                 "#include <stdio.h>", "#include <string.h>"]


def _statements(lines: list[str]) -> list[int]:
    """Indexes of lines that look like a statement inside a function body."""
    return [i for i, l in enumerate(lines) if l.startswith("\t") and l.rstrip().endswith(";")]


def _op_name(text: str) -> str:
    m = re.search(r"CAD_OP\(\w+\)\s*\n\s*void\s+(\w+)", text)
    return m.group(1) if m else "op"


def mutate(text: str, rng: random.Random) -> tuple[str, list[str]]:
    """text with one to three mutations; and their names."""
    done = []
    for _ in range(rng.randint(1, 3)):
        lines = text.split("\n")
        stmts = _statements(lines)
        kind = rng.choice(["swap_op", "dup", "delete", "swap_lines", "nest", "loop", "forbidden", "forbidden_top",
                           "rename", "constant", "truncate"])
        if kind == "swap_op":
            ms = list(_BINOP_RE.finditer(text))
            if not ms:
                continue
            m = rng.choice(ms)
            text = text[:m.start()] + rng.choice(BINOPS) + text[m.end():]
        elif kind in ("dup", "delete", "swap_lines", "nest", "loop", "forbidden") and not stmts:
            continue
        elif kind == "dup":
            i = rng.choice(stmts)
            lines.insert(i, lines[i])
            text = "\n".join(lines)
        elif kind == "delete":
            del lines[rng.choice(stmts)]
            text = "\n".join(lines)
        elif kind == "swap_lines":
            i, j = rng.choice(stmts), rng.choice(stmts)
            lines[i], lines[j] = lines[j], lines[i]
            text = "\n".join(lines)
        elif kind == "nest":
            i = rng.choice(stmts)
            m = re.match(r"^(\s*[^=;]*[^=!<>+\-*/%&|^]=\s*)(.+);\s*$", lines[i])
            if not m:
                continue
            depth = rng.choice([2, 10, 100, 300, 1000, 3000])
            how = rng.choice(["paren", "minus", "not", "sum", "ternary"])
            e = m.group(2)
            if how == "paren":
                e = "(" * depth + e + ")" * depth
            elif how == "minus":
                e = "- " * (depth - depth % 2) + "(" + e + ")"
            elif how == "not":
                e = "(" + e + ")" + " + !" * 1 + "!" * depth + "0"
            elif how == "sum":
                e = "(" + e + ")" + " + 0" * depth
            else:
                e = "(1 ? " * depth + "(" + e + ")" + " : 0)" * depth
            lines[i] = m.group(1) + e + ";"
            text = "\n".join(lines)
        elif kind == "loop":
            i = rng.choice(stmts)
            n = rng.choice(["0", "1", "3", "4096", "4097", "100000", "-1", "2147483647"])
            lines[i] = f"\tfor (int fz_k = 0; fz_k < {n}; fz_k++) {{ {lines[i].strip()} }}"
            text = "\n".join(lines)
        elif kind == "forbidden":
            i = rng.choice(stmts)
            lines.insert(i, "\t" + rng.choice(FORBIDDEN).format(name=_op_name(text)))
            text = "\n".join(lines)
        elif kind == "forbidden_top":
            at = next((k for k, l in enumerate(lines) if l.startswith("CAD_OP")), len(lines))
            lines.insert(at, rng.choice(FORBIDDEN_TOP))
            text = "\n".join(lines)
        elif kind == "rename":
            helpers = [m.group(1) for m in _HELPER_RE.finditer(text) if m.group(1) != _op_name(text)]
            if not helpers:
                continue
            old = rng.choice(helpers)
            text = re.sub(rf"\b{re.escape(old)}\b", rng.choice(BUILTIN_NAMES), text)
        elif kind == "constant":
            ms = list(_NUMBER_RE.finditer(text))
            if not ms:
                continue
            m = rng.choice(ms)
            text = text[:m.start()] + rng.choice(CONSTANTS) + text[m.end():]
        elif kind == "truncate":
            text = text[:rng.randrange(len(text) + 1)]
        done.append(kind)
    return text, done


class Fuzzer:
    def __init__(self, build: Path, work: Path, gcc: bool):
        self.build, self.work, self.gcc = build, work, gcc
        self.cadc = str(build / "bin" / "cadc")
        self.crashes = build / "fuzz_op" / "crashes"
        self.findings: list[tuple[str, Path]] = []
        self.valid = {}
        self.seed = SEEDS[0]   # the file the current mutant comes from

    def check(self, path: Path) -> tuple[subprocess.CompletedProcess | None, float]:
        t = time.monotonic()
        try:
            r = subprocess.run([self.cadc, "op", "check", "--json", "-I", str(OPS), str(path)],
                               capture_output=True, text=True, timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            return None, time.monotonic() - t
        return r, time.monotonic() - t

    def seed_ok(self, seed: Path) -> bool:
        if seed not in self.valid:
            r, _ = self.check(seed)
            self.valid[seed] = r is not None and r.returncode == 0
        return self.valid[seed]

    def report(self, kind: str, text: str, why: str, origin: str) -> None:
        self.crashes.mkdir(parents=True, exist_ok=True)
        h = hashlib.sha1(text.encode()).hexdigest()[:12]
        path = self.crashes / f"{kind}-{h}.c"
        why = why.replace("*/", "* /")
        path.write_text(f"/* fuzz_op_source: {kind}: {why}\n * from {origin} */\n{text}")
        if os.environ.get("CAD_OP_PENDING") == "1" and any(k == kind and w in why for k, w in KNOWN):
            print(f"KNOWN {kind}: {path}\n  {why[:300]}", flush=True)
            return
        self.findings.append((f"{kind}: {why[:300]}", path))
        print(f"FINDING {kind}: {path}\n  {why[:500]}", flush=True)

    def one(self, seed: Path, text: str, origin: str) -> None:
        f = self.work / "mutant.c"
        f.write_text(text)
        r, secs = self.check(f)
        if r is None:
            return self.report("timeout", text, f"cadc op check took over {TIMEOUT} s", origin)
        if r.returncode < 0:
            return self.report("signal", text, f"cadc op check died of signal {-r.returncode}: {r.stderr[-400:]}",
                               origin)
        if r.returncode not in (0, 1):
            return self.report("status", text, f"exit status {r.returncode}: {r.stderr[-400:]}", origin)
        try:
            doc = json.loads(r.stdout)
        except ValueError as e:
            return self.report("json", text, f"stdout is not JSON ({e}): {r.stdout[:200]!r}", origin)
        if self.seed_ok(seed):
            unlocated = [d for d in doc.get("diagnostics", [])
                         if d.get("severity") == "error" and not (d.get("location", {}).get("line") or 0) > 0]
            if unlocated:
                return self.report("unlocated", text, json.dumps(unlocated)[:400], origin)
        if r.returncode == 0:
            self.runs(text, doc, origin)

    def runs(self, text: str, doc, origin: str) -> None:
        """An accepted mutant compiles and runs (and, with --gcc, agrees
        with gcc where gcc builds it and it runs)."""
        src, cadop = self.work / "ok.c", self.work / "ok.cadop"
        src.write_text(text)
        r = subprocess.run([self.cadc, "op", "compile", str(src), "-o", str(cadop), "-I", str(OPS)],
                           capture_output=True, text=True, timeout=TIMEOUT)
        if r.returncode != 0:
            return self.report("compile", text, f"op check accepts, op compile fails ({r.returncode}): "
                                                f"{r.stderr[-400:]}", origin)
        tool = str(self.build / "bin" / "op_tool")
        for op in json.loads(cadop.read_text())["ops"]:
            name = op["name"]
            files = {k: self.work / f"ok.{k}" for k in ("in", "io", "vm", "nat")}
            g = subprocess.run([tool, "gen", str(cadop), name, "64", "5", str(files["in"]), str(files["io"])],
                               capture_output=True, text=True, timeout=TIMEOUT)
            v = subprocess.run([tool, "vm", str(cadop), name, str(files["in"]), str(files["io"]), str(files["vm"])],
                               capture_output=True, text=True, timeout=TIMEOUT)
            if g.returncode != 0 or v.returncode != 0:
                return self.report("run", text, f"op_tool: {g.stderr[-200:]} {v.stderr[-200:]}", origin)
            if self.gcc:
                self.against_gcc(text, op, files, origin)

    def against_gcc(self, text: str, op, files, origin: str) -> None:
        sys.path.insert(0, str(Path(__file__).parent))
        from test_op_corpus import NATIVE_EXTRA, NEEDS
        from test_ops import NATIVE_FLAGS, DRIVER, differs
        if self.seed.stem in NEEDS:
            return
        drv, exe = self.work / "drv.c", self.work / "drv"
        drv.write_text(DRIVER % {"src": self.work / "ok.c", "esz": op["elem_size"], "name": op["name"]})
        # -Werror=overflow: a constant out of its type's range (int k = 1e308)
        # is undefined behaviour that gcc folds one way and the VM's
        # conversion another: no reference either.
        c = subprocess.run(["gcc", *NATIVE_FLAGS, *NATIVE_EXTRA.get(self.seed.stem, []), "-Werror=overflow",
                            "-I", str(OPS), str(drv), "-o", str(exe), "-lm"], capture_output=True, text=True)
        if c.returncode != 0:
            return
        try:
            n = subprocess.run([str(exe), files["in"], files["io"], files["nat"]], capture_output=True, timeout=10)
        except subprocess.TimeoutExpired:
            return
        if n.returncode != 0:   # undefined behaviour natively (x / 0, INT_MIN / -1): no reference
            return
        problem = differs(files["vm"].read_bytes(), files["nat"].read_bytes(), op["elem_size"],
                          [tuple(f) for f in op["fields"]])
        if problem:
            self.report("differs", text, f"{op['name']}: {problem}", origin)


def run(build: Path, seconds: float, seed: int = 1, gcc: bool = False, only: int | None = None,
        quiet: bool = False, most: int | None = None) -> list[tuple[str, Path]]:
    """Fuzzes for `seconds` or `most` mutants, whichever ends first (or
    just mutant `only`); the findings."""
    texts = {s: s.read_text() for s in SEEDS}
    with tempfile.TemporaryDirectory(prefix="fuzz_op_") as tmp:
        fz = Fuzzer(build, Path(tmp), gcc)
        start, i, kinds = time.monotonic(), 0, {}
        while True:
            if only is not None:
                i = only
            elif time.monotonic() - start >= seconds or (most is not None and i >= most):
                break
            rng = random.Random(f"{seed}:{i}")
            src = rng.choice(SEEDS)
            text, done = mutate(texts[src], rng)
            for k in done:
                kinds[k] = kinds.get(k, 0) + 1
            fz.seed = src
            fz.one(src, text, f"{src.relative_to(ROOT)}, seed {seed}, mutant {i}: {', '.join(done) or 'none'}")
            i += 1
            if only is not None:
                break
        if not quiet:
            print(f"fuzz_op_source: seed {seed}, {i if only is None else 1} mutants in "
                  f"{time.monotonic() - start:.0f} s, {len(fz.findings)} findings; mutations: "
                  + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())), flush=True)
        return fz.findings


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("build", type=Path)
    ap.add_argument("seconds", type=float)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--gcc", action="store_true", help="compare accepted mutants with gcc")
    ap.add_argument("--only", type=int, help="replay mutant I of the seed")
    a = ap.parse_args()
    findings = run(a.build.resolve(), a.seconds, a.seed, a.gcc, a.only)
    for why, path in findings:
        print(f"{path}: {why}")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
