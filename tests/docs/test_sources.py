"""Source comments state the present rule, not its history: no dates in
comments under cadrt/, cadc/, kmod/, tests/ and bench/, nor in the
top-level CMakeLists.txt.  How a rule came to be, and the measurements
behind it, belong in commit messages and bench/report.md."""

import ast
import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATE = re.compile(r"\b20\d\d-[01]\d-[0-3]\d\b")
C_LIKE = {".c", ".h", ".cpp", ".hpp", ".cc"}
PYTHON = {".py"}
HASH_COMMENTS = {".sh", ".cmake", ".txt", ""}  # CMakeLists.txt, Kbuild, Makefiles, scripts
# What is checked: a folder or a file, with the suffixes read there (None:
# every suffix a scanner below reads); "CMakeLists.txt" stands for that name.
CHECKED = {
    "cadrt": None,
    "cadc": None,
    "kmod": None,
    "tests": C_LIKE | PYTHON | {".cmake", ".sh", "CMakeLists.txt"},
    "bench": C_LIKE | PYTHON | {".cmake", "CMakeLists.txt"},
    "CMakeLists.txt": None,
}
# Generated: the benchmarks' results (bench/report.md is not a source).
NOT_CHECKED = ("bench/results",)


def c_comments(text):
    """(line, comment text) of every // and /* */ comment of C or C++,
    skipping string and character literals."""
    out, i, n, line = [], 0, len(text), 1
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append((line, text[i:j]))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append((line, text[i:j]))
            line += text.count("\n", i, j)
            i = j
        elif c in "\"'":
            if c == '"' and i > 0 and text[i - 1] == "R":  # a raw string: R"delim(...)delim"
                k = text.index("(", i)
                end = ")" + text[i + 1:k] + '"'
                j = text.find(end, k)
                j = n if j < 0 else j + len(end)
            else:
                j = i + 1
                while j < n and text[j] != c and text[j] != "\n":
                    j += 2 if text[j] == "\\" else 1
                j += 1
            line += text.count("\n", i, j)
            i = j
        else:
            i += 1
    return out


def hash_comments(text):
    return [(k, line[line.index("#"):]) for k, line in enumerate(text.split("\n"), 1) if "#" in line]


def python_comments(text):
    """(line, comment text) of every # comment and every docstring (of the
    module, a class or a function) of Python."""
    out = [(tok.start[0], tok.string) for tok in tokenize.generate_tokens(io.StringIO(text).readline)
           if tok.type == tokenize.COMMENT]
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and \
                    isinstance(first.value.value, str):
                out.append((first.value.lineno, first.value.value))
    return sorted(out)


def scanner(path):
    """The function that finds path's comments, or None for a file without
    comments it can read."""
    if path.suffix in C_LIKE:
        return c_comments
    if path.suffix in PYTHON:
        return python_comments
    if path.suffix in HASH_COMMENTS and path.name != "README":
        return hash_comments
    return None


def checked(top, path):
    suffixes = CHECKED[top]
    return suffixes is None or path.suffix in suffixes or path.name in suffixes


def sources():
    """(top, relative path, path, scanner) of every checked source file."""
    for top in CHECKED:
        paths = [ROOT / top] if (ROOT / top).is_file() else sorted((ROOT / top).rglob("*"))
        for path in paths:
            rel = path.relative_to(ROOT).as_posix()
            if not path.is_file() or any(rel.startswith(x + "/") for x in NOT_CHECKED):
                continue
            scan = scanner(path)
            if scan and checked(top, path):
                yield top, rel, path, scan


def dated_comments(rel, path, scan):
    """"rel:line: date" for every date in a comment of path; None if it is
    not text."""
    try:
        text = path.read_text()
    except UnicodeDecodeError:
        return None
    return [f"{rel}:{line + comment.count(chr(10), 0, m.start())}: {m.group(0)}"
            for line, comment in scan(text) for m in DATE.finditer(comment)]


def test_no_dates_in_comments():
    bad, seen = [], {top: 0 for top in CHECKED}
    for top, rel, path, scan in sources():
        found = dated_comments(rel, path, scan)
        if found is None:
            continue
        seen[top] += 1
        bad += found
    assert sum(seen.values()) > 200 and all(seen.values()), f"too few source files checked: {seen}"
    assert not bad, ("dated comments (state the present rule; history goes in commit messages):\n"
                     + "\n".join(bad))


def test_the_comment_scanner():
    text = 'int a; // 2026-01-02\nchar *s = "// 2026-01-03"; /* x\n 2026-01-04 */ char c = \'"\';\n// ok'
    comments = c_comments(text)
    assert [(line, c) for line, c in comments] == [(1, "// 2026-01-02"), (2, "/* x\n 2026-01-04 */"), (4, "// ok")]


def test_the_python_scanner():
    text = ('"""Module 2026-01-01."""\n'
            'x = "# 2026-01-02"  # 2026-01-03\n'
            'def f():\n'
            '    """One\n'
            '    2026-01-04."""\n'
            '    return "2026-01-05"\n')
    found = [(line + c.count("\n", 0, m.start()), m.group(0)) for line, c in python_comments(text)
             for m in DATE.finditer(c)]
    assert found == [(1, "2026-01-01"), (2, "2026-01-03"), (5, "2026-01-04")]


def test_the_checked_files():
    rels = {rel for _, rel, _, _ in sources()}
    assert {"CMakeLists.txt", "tests/CMakeLists.txt", "tests/rt/test_runtime.py", "tests/rt/rt_check.c", "tests/kmod/kcad_check.c",
            "tests/cadc/library_test.cpp", "bench/rt_bench.c", "bench/report.py"} <= rels
    assert not [r for r in rels if r.startswith("bench/results/") or r.endswith((".md", ".json", ".cad"))]
