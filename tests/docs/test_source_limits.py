"""Size limits of the sources under cadrt/, cadc/ and kmod/: no file over
MAX_FILE_LINES lines, no function over MAX_FUNCTION_LINES lines (from the
line of its parameter list to its closing brace; a macro's body is not a
function).  Files still over a limit are listed in KNOWN_OVER until they
are split; the list may only shrink: an entry whose file now keeps the
limits, or has gone, fails the test until it is dropped."""

import re
from pathlib import Path

from test_sources import c_comments

ROOT = Path(__file__).resolve().parents[2]
CHECKED = ("cadrt", "cadc", "kmod")
C_LIKE = {".c", ".h", ".cpp", ".hpp", ".cc"}
MAX_FILE_LINES = 1000
MAX_FUNCTION_LINES = 80

# Files over a limit, to be split; never add one.
KNOWN_OVER = (
    "cadc/lib/check.cpp",
    "cadc/lib/instance.cpp",
    "cadc/lib/lexer.cpp",
    "cadc/lib/library.cpp",
    "cadc/lib/schema.cpp",
    "cadc/lib/sweep.cpp",
    "cadc/lib/verify.cpp",
    "cadc/tool/cmd_build.cpp",
    "cadc/tool/cmd_select.cpp",
    "cadc/tool/cmd_simulate.cpp",
    "cadc/tool/cmd_verify.cpp",
    "cadrt/src/api.cpp",
    "cadrt/src/builder.cpp",
    "cadrt/src/requests.cpp",
    "cadrt/tools/cadrun.cpp",
    "kmod/cad/cad_pin.c",
    "kmod/cad/cad_run.c",
    "kmod/core/log.c",
)
# The operator compiler, the VM interpreter and its verifier were split to
# keep the limits: they never join KNOWN_OVER.
KEPT = (re.compile(r"cadc/opc/[^/]+\.(cpp|h)$"), re.compile(r"kmod/core/vm[^/]*\.[ch]$"))

# Words before a ( whose ) { is no function: control statements, and
# attributes (namespace cadmpi __attribute__((visibility("hidden"))) {).
CONTROL = {"if", "for", "while", "switch", "catch", "sizeof", "return", "defined", "alignof", "decltype",
           "__attribute__"}


def blank_out(text):
    """text with comments, string and character literals and preprocessor
    lines (with their continuations) replaced by spaces, newlines kept."""
    chars = list(text)
    # Comments: the scanner's, found in order.
    pos = 0
    for _, comment in c_comments(text):
        i = text.index(comment, pos)
        for k in range(i, i + len(comment)):
            if chars[k] != "\n":
                chars[k] = " "
        pos = i + len(comment)
    text = "".join(chars)
    # String and character literals (comments are gone, so quotes are real).
    text = re.sub(r'"(?:\\.|[^"\\\n])*"', lambda m: '""' + " " * (len(m.group(0)) - 2), text)
    text = re.sub(r"'(?:\\.|[^'\\\n])*'", lambda m: "''" + " " * (len(m.group(0)) - 2), text)
    out, cont = [], False
    for line in text.split("\n"):
        directive = cont or line.lstrip().startswith("#")
        cont = directive and line.rstrip().endswith("\\")
        out.append(" " * len(line) if directive else line)
    return "\n".join(out)


def functions(text):
    """(name, first line, last line) of every function definition that is
    not inside another one: a body { after a parameter list ), possibly
    with qualifiers, a trailing return type or a constructor's
    initialisers between them; the ) must not close a control statement."""
    src = blank_out(text)
    line_at = [0] * (len(src) + 1)
    line = 1
    for i, c in enumerate(src):
        line_at[i] = line
        if c == "\n":
            line += 1
    line_at[len(src)] = line
    found, depth, i, n = [], 0, 0, len(src)
    opens = []  # positions of ( not yet closed
    closes = {}  # position of ) -> position of its (
    while i < n:
        c = src[i]
        if c == "(":
            opens.append(i)
        elif c == ")" and opens:
            closes[i] = opens.pop()
        elif c == "{":
            head = function_head(src, i, closes)
            if head is not None:
                name, start = head
                j, d = i + 1, 1
                while j < n and d:
                    d += {"{": 1, "}": -1}.get(src[j], 0)
                    j += 1
                found.append((name, line_at[start], line_at[j - 1]))
                i = j
                continue
        i += 1
    return found


HEAD = re.compile(r"\)\s*(?:const\s*|override\s*|noexcept\s*|final\s*|mutable\s*)*"
                  r"(?:->\s*[\w:<>,\s\*&]+)?$")


def function_head(src, brace, closes):
    """(name, position of its parameter list) if the { at brace opens a
    function body, else None."""
    m = HEAD.search(src[max(0, brace - 400):brace].rstrip())
    if not m:
        return None
    close = max(0, brace - 400) + m.start()
    while True:
        opener = closes.get(close)
        if opener is None:
            return None
        word = re.search(r"([\w~:]+|\])\s*$", src[max(0, opener - 200):opener])
        if not word or word.group(1) in CONTROL:
            return None
        # a constructor's initialiser ") : a_(x), b_(y) {": the list before it
        start = opener - len(word.group(0))
        sep = re.search(r"(\)\s*)(?::(?!:)|,)\s*$", src[max(0, start - 200):start])
        if not sep or not word.group(1)[0].isalpha() and word.group(1)[0] != "_":
            return word.group(1), opener
        close = max(0, start - 200) + sep.start(1)


def sources():
    for top in CHECKED:
        for path in sorted((ROOT / top).rglob("*")):
            if path.is_file() and path.suffix in C_LIKE:
                yield path.relative_to(ROOT).as_posix(), path


def problems(path):
    return problems_of(path.read_text(errors="replace"))


def problems_of(text):
    out = []
    lines = text.count("\n") + (0 if text.endswith("\n") else 1)
    if lines > MAX_FILE_LINES:
        out.append(f"{lines} lines (at most {MAX_FILE_LINES})")
    for name, first, last in functions(text):
        if last - first + 1 > MAX_FUNCTION_LINES:
            out.append(f"{name} at line {first}: {last - first + 1} lines (at most {MAX_FUNCTION_LINES})")
    return out


def test_sources_keep_the_limits():
    bad, seen = [], 0
    for rel, path in sources():
        seen += 1
        if rel in KNOWN_OVER:
            continue
        bad += [f"{rel}: {p}" for p in problems(path)]
    assert seen > 50, f"only {seen} source files checked"
    assert not bad, "over the size limits (split the file or the function):\n" + "\n".join(bad)


def test_the_known_exclusions_only_shrink():
    stale = [x for x in KNOWN_OVER if not (ROOT / x).is_file() or not problems(ROOT / x)]
    assert not stale, "within the limits now, or gone: drop from KNOWN_OVER:\n" + "\n".join(stale)
    kept = [x for x in KNOWN_OVER if any(k.match(x) for k in KEPT)]
    assert not kept, "split to keep the limits, never excluded:\n" + "\n".join(kept)
    checked = [rel for rel, _ in sources() if any(k.match(rel) for k in KEPT)]
    assert "cadc/opc/opc.cpp" in checked and "kmod/core/vm.c" in checked, checked


def test_the_limits_fail():
    body = "".join(f"\tx += {k};\n" for k in range(MAX_FUNCTION_LINES - 3))
    assert problems_of(f"void f(void)\n{{\n{body}}}\n") == []
    long = problems_of(f"void f(void)\n{{\n{body}\tx++;\n}}\n")
    assert long == [f"f at line 1: {MAX_FUNCTION_LINES + 1} lines (at most {MAX_FUNCTION_LINES})"]
    assert problems_of("int x;\n" * (MAX_FILE_LINES + 1)) == [f"{MAX_FILE_LINES + 1} lines (at most {MAX_FILE_LINES})"]


def test_the_function_finder():
    text = (
        "#define M(x) { return x; }\n"
        "static int f(int a,\n"
        "             int b)\n"
        "{\n"
        "\tif (a) {\n"
        "\t\treturn \"}\";\n"
        "\t}\n"
        "\treturn b; /* } */\n"
        "}\n"
        "struct s { int a; } v = { 1 };\n"
        "class C {\n"
        "  C(int x) : x_(x) {}\n"
        "  int g() const { auto l = [&](int y) { return y; }; return l(x_); }\n"
        "  int x_;\n"
        "};\n"
        "namespace n __attribute__((visibility(\"hidden\"))) {\n"
        "int h() { return 0; }\n"
        "}\n"
    )
    assert functions(text) == [("f", 2, 9), ("C", 12, 12), ("g", 13, 13), ("h", 17, 17)]
