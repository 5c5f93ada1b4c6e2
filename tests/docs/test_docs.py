"""The documentation: README.md and docs/*.md.

- README.md is a user page of at most 300 lines;
- no prose line over 120 characters (code blocks and tables may be wider);
- no ISO dates, issue numbers or anything that looks like a commit hash:
  the history of a figure or a decision belongs in commit messages;
- every relative link resolves to a file inside the repository, and to a
  heading of it where the link names an anchor;
- every fenced block whose info string is `sh {test}` runs, in order, in
  one temporary folder per page, against the build in build/ (or
  CAD_BUILD_DIR); see docs/testing.md, "Runnable examples".
"""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
README_MAX_LINES = 300
LINE_MAX = 120
RUNNABLE = "sh {test}"
DATE = re.compile(r"\b20\d\d-[01]\d-[0-3]\d\b")
# A word of 7 to 40 hex digits with at least one digit and one letter:
# what an abbreviated or full commit hash looks like.
ISSUE = re.compile(r"\b[Ii]ssues? #?\d+\b")
HEX = re.compile(r"\b(?=[0-9a-fA-F]*[0-9])(?=[0-9a-fA-F]*[a-fA-F])[0-9a-fA-F]{7,40}\b")
LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^()\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^\s*(```+|~~~+)(.*)$")


def rel(page):
    return page.relative_to(ROOT).as_posix()


def blocks(text):
    """(info string, first line number, body) of each fenced block."""
    out, lines, i = [], text.split("\n"), 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, info, start, body = m.group(1), m.group(2).strip(), i + 1, []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence):
            body.append(lines[i])
            i += 1
        out.append((info, start, "\n".join(body) + "\n"))
        i += 1
    return out


def prose(text):
    """(line number, line) of each line outside fenced blocks."""
    inside = None
    for n, line in enumerate(text.split("\n"), 1):
        m = FENCE.match(line)
        if m and (inside is None or line.strip().startswith(inside)):
            inside = m.group(1) if inside is None else None
            continue
        if inside is None:
            yield n, line


def anchors(page):
    """GitHub's anchors for the headings of a Markdown page."""
    seen, out = {}, set()
    for _, line in prose(page.read_text()):
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        a = m.group(1).strip().lower()
        a = re.sub(r"[^\w\- ]", "", a).replace(" ", "-")
        k = seen.get(a, 0)
        seen[a] = k + 1
        out.add(a if k == 0 else f"{a}-{k}")
    return out


def test_there_are_pages():
    assert (ROOT / "README.md").exists() and len(PAGES) > 5, PAGES


def test_readme_is_short():
    n = len((ROOT / "README.md").read_text().splitlines())
    assert n <= README_MAX_LINES, f"README.md has {n} lines, more than {README_MAX_LINES}: move reference to docs/"


@pytest.mark.parametrize("page", PAGES, ids=rel)
def test_no_long_prose_lines(page):
    bad = [f"{rel(page)}:{n}: {len(line)} characters" for n, line in prose(page.read_text())
           if len(line) > LINE_MAX and not line.lstrip().startswith("|")]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("page", PAGES, ids=rel)
def test_no_dates_or_commit_hashes(page):
    bad = []
    for n, line in enumerate(page.read_text().split("\n"), 1):
        for m in DATE.finditer(line):
            bad.append(f"{rel(page)}:{n}: a date, {m.group(0)}")
        for m in HEX.finditer(line):
            bad.append(f"{rel(page)}:{n}: what looks like a commit hash, {m.group(0)}")
        for m in ISSUE.finditer(line):
            bad.append(f"{rel(page)}:{n}: an issue number, {m.group(0)}")
    assert not bad, "history belongs in commit messages:\n" + "\n".join(bad)


@pytest.mark.parametrize("page", PAGES, ids=rel)
def test_relative_links_resolve_inside_the_repository(page):
    bad = []
    for n, line in prose(page.read_text()):
        for m in LINK.finditer(line):
            target = m.group(1)
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                continue  # https:, mailto: ...
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            if ROOT not in dest.parents and dest != ROOT:
                bad.append(f"{rel(page)}:{n}: {target} leaves the repository")
            elif not dest.exists():
                bad.append(f"{rel(page)}:{n}: {target}: no such file")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                bad.append(f"{rel(page)}:{n}: {target}: no heading #{anchor} in {rel(dest)}")
    assert not bad, "\n".join(bad)


def test_the_runnable_marker_is_documented():
    text = (ROOT / "docs" / "testing.md").read_text()
    assert RUNNABLE in text


def test_the_tutorial_runs_its_core_steps():
    """The tutorial's steps are marked runnable: write, check, verify, build,
    run from C and from MPI."""
    runnable = "".join(body for info, _, body in blocks((ROOT / "docs" / "tutorial.md").read_text())
                       if info == RUNNABLE)
    for step in ("cadc check", "cadc verify", "cadc build", "cadrun -n", "libcadmpi.so", "CADRT_EXPLAIN=1"):
        assert step in runnable, step


def runnable_pages():
    return [p for p in PAGES if any(info == RUNNABLE for info, _, _ in blocks(p.read_text()))]


@pytest.mark.parametrize("page", runnable_pages(), ids=rel)
def test_runnable_examples(page, tmp_path):
    build = Path(os.environ.get("CAD_BUILD_DIR", ROOT / "build")).resolve()
    if not (build / "bin" / "cadc").exists():
        pytest.skip(f"no build in {build} (make build, or set CAD_BUILD_DIR): the examples of {rel(page)} not run")
    env = dict(os.environ, CAD_SRC=str(ROOT), CAD_BUILD=str(build),
               PATH=f"{build / 'bin'}:{os.environ.get('PATH', '/usr/bin:/bin')}")
    if os.geteuid() == 0:  # Open MPI's mpirun refuses root without these
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    for info, line, body in blocks(page.read_text()):
        if info != RUNNABLE:
            continue
        run = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", body], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, (f"{rel(page)}:{line}: the block exited {run.returncode}\n"
                                     f"--- stdout\n{run.stdout}--- stderr\n{run.stderr}")


def test_every_setting_is_declared():
    """Every CADRT_* and CADMPI* name in a string literal of cadrt/'s
    sources (getenv's argument, or a prefix such as "CADRT_ALGORITHM_") is
    a row of the settings table, cadrt/src/settings.cpp (the runtime also
    aborts on reading an undeclared one)."""
    table_path = ROOT / "cadrt" / "src" / "settings.cpp"
    table = table_path.read_text()
    declared = set(re.findall(r'\{"(CADRT_[A-Z0-9_]*|CADMPI[A-Z0-9_]*)"', table))
    assert {"CADRT_ENGINE", "CADMPI", "CADRT_JOB_FD"} <= declared, declared
    names = set()
    for path in (ROOT / "cadrt").rglob("*"):
        if path.suffix in (".c", ".cpp", ".h") and path != table_path:
            names |= set(re.findall(r'"(CADRT_[A-Z0-9_]*|CADMPI[A-Z0-9_]*)', path.read_text()))
    assert "CADRT_ENGINE" in names and "CADMPI" in names, names
    missing = sorted(n for n in names if n not in declared and n != "CADRT_ALGORITHM_")
    assert not missing, f"not declared in cadrt/src/settings.cpp: {missing}"


def test_settings_table_is_the_runtimes(build_dir):
    """docs/runtime.md's environment table is exactly what
    `cadrun --settings=markdown` prints from the settings table (regenerate
    it with that command)."""
    run = subprocess.run([str(build_dir / "bin" / "cadrun"), "--settings=markdown"], capture_output=True,
                         text=True, timeout=30, check=True)
    doc = (ROOT / "docs" / "runtime.md").read_text()
    start = doc.index("| Variable | Default | Meaning |")
    end = doc.find("\n\n", start)
    assert doc[start:end + 1] == run.stdout, "docs/runtime.md's table differs from `cadrun --settings=markdown`"
