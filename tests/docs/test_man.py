"""The man pages (docs/man/mdman.py, built into build/share/man/man1):
generated from the current docs, valid roff, and complete."""

import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MDMAN = ROOT / "docs" / "man" / "mdman.py"


def render(page):
    r = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-rLL=100n", "-rHY=0", str(page)], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0 and not r.stderr, f"{page}: {r.stderr}"
    return re.sub(r".\x08", "", r.stdout)  # no overstriking


@pytest.mark.parametrize("name,section", [("cadc", 1), ("cadrun", 1), ("cadrt", 3), ("cad", 4)])
def test_page_is_valid_roff(build_dir, name, section):
    page = build_dir / "share" / "man" / f"man{section}" / f"{name}.{section}"
    text = render(page)
    for heading in ("NAME", "SYNOPSIS", "DESCRIPTION", "SEE ALSO"):
        assert re.search(rf"^{heading}$", text, re.M), (name, heading)


def test_cadrt_page_lists_every_function(build_dir):
    """cadrt(3) names every function cadrt.h declares (the C API's table
    abbreviates a family as cadrt_ibcast, _ireduce, ...)."""
    header = (ROOT / "cadrt" / "include" / "cadrt" / "cadrt.h").read_text()
    text = render(build_dir / "share" / "man" / "man3" / "cadrt.3")
    missing = [f for f in sorted(set(re.findall(r"\b(cadrt_\w+)\(", header)))
               if f not in text and "_" + f.split("_", 1)[1] not in text
               and not any(f.startswith(g) and f[len(g):] in text for g in ("cadrt_comm", "cadrt_cad"))]
    assert not missing, f"cadrt(3) does not name {missing}"


def test_cad_page_has_every_ioctl(build_dir):
    uapi = (ROOT / "kmod" / "uapi" / "cad.h").read_text()
    text = render(build_dir / "share" / "man" / "man4" / "cad.4")
    ioctls = set(re.findall(r"#define (CAD_IOC_[A-Z_]+)\s+_IO", uapi))
    assert ioctls and not [i for i in ioctls if i not in text], sorted(ioctls)


def test_cadc_page_has_every_subcommand(build_dir):
    listed = subprocess.run([str(build_dir / "bin" / "cadc"), "--help"], capture_output=True, text=True,
                            timeout=30).stdout
    subs = re.findall(r"^  (\w+) {2,}", listed.split("Subcommands:")[1], re.M)
    assert "verify" in subs and "op" in subs, listed
    text = render(build_dir / "share" / "man" / "man1" / "cadc.1")
    missing = [s for s in subs if not re.search(rf"^   cadc {s}\b", text, re.M)]
    assert not missing, f"cadc(1) has no subsection for {missing}"


def test_cadrun_page_has_every_setting(build_dir):
    text = render(build_dir / "share" / "man" / "man1" / "cadrun.1")
    assert re.search(r"^ENVIRONMENT$", text, re.M)
    table = subprocess.run([str(build_dir / "bin" / "cadrun"), "--settings=markdown"], capture_output=True,
                           text=True, timeout=30, check=True).stdout
    for name in re.findall(r"^\| `([A-Z_<>]+)`", table, re.M):
        assert name in text, name


def test_mdman_on_markup(tmp_path):
    """The markdown subset: headings, code, tables, lists, inline fonts,
    links, a line starting with a dot, characters beyond ASCII."""
    md = tmp_path / "x.md"
    md.write_text("# Title\n\nSome `code` and **bold** and a [link](y.md#z) -- ok.\n.dot first\n\n"
                  "## Part\n\n```\n.literal \\ back\n```\n\n| A | B | C |\n|---|---|---|\n| `a` | b1 | c1 |\n\n"
                  "- item one\n  continued\n- item \u2264 two\n")
    out = tmp_path / "x.1"
    subprocess.run(["/usr/bin/python3", str(MDMAN), str(out), "x", "1", "an example", "--synopsis", "x -y",
                    str(md)], check=True, timeout=30)
    roff = out.read_text()
    assert '.SH "DESCRIPTION"' in roff and '.SS "Part"' in roff and "\\fBcode\\fR" in roff
    assert "\\&.dot first" in roff and "\\&.literal \\e back" in roff and "\\[u2264]" in roff
    assert ".TP\n\\fBa\\fR\nB: b1; C: c1" in roff
    text = render(out)
    assert "and a link " in text and "y.md" not in text  # a link's text, not its target
    assert "x -y" in text and "item one continued" in text


def test_mdman_refuses_a_missing_section(tmp_path):
    md = tmp_path / "x.md"
    md.write_text("# T\n\n## A\n\ntext\n")
    r = subprocess.run(["/usr/bin/python3", str(MDMAN), str(tmp_path / "x.1"), "x", "1", "s", f"{md}#b=B"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode != 0 and "no section #b" in r.stderr, r
