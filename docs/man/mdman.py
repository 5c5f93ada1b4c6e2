#!/usr/bin/python3
"""Writes a man page (roff, the man macros) from sections of docs/*.md, so
that the manual pages and the documentation never say different things.

    mdman.py OUT NAME SECTION SUMMARY [--synopsis LINE | --synopsis-block]... [--see-also REF]... SOURCE...

A SOURCE is FILE.md (the whole page: its title becomes DESCRIPTION and its
sections subsections) or FILE.md#ANCHOR=TITLE (the section with that
GitHub-style anchor, as the man section TITLE; its own subsections become
subsections).  --synopsis-block takes the SYNOPSIS from the first source's
first fenced block, which then is not repeated.  The markdown subset of docs/ is understood: headings,
paragraphs, fenced code, tables (each row a tagged paragraph), lists,
`code`, **bold**, *emphasis* and links (their text).
"""

import re
import sys
from pathlib import Path

FENCE = re.compile(r"^\s*(```+|~~~+)")


def anchor(heading):
    """GitHub's anchor of a heading's text."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def escape(text):
    """Text safe in roff: backslashes as \\e, hyphens as minus signs (the
    options' dashes), other than ASCII as \\[uXXXX]."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "".join(c if ord(c) < 128 else f"\\[u{ord(c):04X}]" for c in text)


def inline(text):
    """Markdown inline markup to roff fonts; links keep their text."""
    out, pos = [], 0
    for m in re.finditer(r"`([^`]+)`", text):
        out.append(plain(text[pos:m.start()]))
        out.append("\\fB" + escape(m.group(1)) + "\\fR")
        pos = m.end()
    out.append(plain(text[pos:]))
    return "".join(out)


def plain(text):
    text = re.sub(r"!?\[([^\]]*)\]\(([^)]*)\)",
                  lambda m: m.group(1) + (f" <{m.group(2)}>" if m.group(2).startswith("http") else ""), text)
    text = escape(text)
    text = re.sub(r"\*\*([^*]+)\*\*", r"\\fB\1\\fR", text)
    text = re.sub(r"(?<![\w*])\*([^*\s][^*]*)\*(?![\w*])", r"\\fI\1\\fR", text)
    return text


def line(text):
    """A text line: one starting with . or ' would be a request."""
    return "\\&" + text if text[:1] in (".", "'") else text


def cells(row):
    return [c.strip() for c in row.strip().strip("|").split("|")]


def convert(lines, top, h1=None):
    """Markdown lines to roff: a heading of level `top` or above is a
    section (.SH), a deeper one a subsection (.SS); h1 renames level 1."""
    out, para, i = [], [], 0

    def flush():
        if para:
            out.append(".PP")
            out.extend(line(inline(p)) for p in para)
            para.clear()

    while i < len(lines):
        text = lines[i]
        if FENCE.match(text):
            flush()
            fence = FENCE.match(text).group(1)
            i += 1
            out += [".PP", ".RS 4", ".nf"]
            while i < len(lines) and not lines[i].strip().startswith(fence):
                out.append(line(escape(lines[i])))
                i += 1
            out += [".fi", ".RE"]
        elif text.startswith("#"):
            flush()
            level = len(text) - len(text.lstrip("#"))
            title = h1 if level == 1 and h1 else text.lstrip("#").strip()
            out.append((".SH " if level <= top else ".SS ") + '"' + inline(title).replace('"', "") + '"')
        elif text.startswith("|"):
            flush()
            header = cells(text)
            i += 2  # the header and the |---| line
            while i < len(lines) and lines[i].startswith("|"):
                row = cells(lines[i])
                rest = [f"{h}: {c}" if len(header) > 2 and h else c for h, c in zip(header[1:], row[1:]) if c]
                out += [".TP", line(inline(row[0])), line(inline("; ".join(rest)))]
                i += 1
            continue
        elif re.match(r"^\s*[-*] ", text):
            flush()
            out += [".IP \\(bu 2", line(inline(re.sub(r"^\s*[-*] ", "", text)))]
            i += 1
            while i < len(lines) and lines[i].startswith("  ") and lines[i].strip():
                out.append(line(inline(lines[i].strip())))
                i += 1
            continue
        elif not text.strip():
            flush()
        else:
            para.append(text.strip())
        i += 1
    flush()
    return out


def section(path, wanted):
    """The lines of the section of path whose heading's anchor is wanted,
    its heading first."""
    lines = Path(path).read_text().splitlines()
    in_code = False
    for n, text in enumerate(lines):
        in_code ^= bool(FENCE.match(text))
        if not in_code and text.startswith("#") and anchor(text.lstrip("#")) == wanted:
            level = len(text) - len(text.lstrip("#"))
            end, code = len(lines), False
            for k in range(n + 1, len(lines)):
                code ^= bool(FENCE.match(lines[k]))
                head = lines[k]
                if not code and head.startswith("#") and len(head) - len(head.lstrip("#")) <= level:
                    end = k
                    break
            return lines[n:end], level
    raise SystemExit(f"mdman: {path}: no section #{wanted}")


def main(argv):
    if len(argv) < 6:
        raise SystemExit(__doc__)
    out, name, number, summary = argv[1:5]
    synopsis, see_also, sources, rest = [], [], [], argv[5:]
    while rest:
        a = rest.pop(0)
        if a == "--synopsis":
            synopsis.append(rest.pop(0))
        elif a == "--synopsis-block":
            synopsis.append(None)
        elif a == "--see-also":
            see_also.append(rest.pop(0))
        else:
            sources.append(a)
    roff = [f'.TH "{name.upper()}" "{number}" "" "CAD" "CAD manual"', ".SH NAME", f"{escape(name)} \\- {escape(summary)}"]
    parts = [read_source(src) for src in sources]
    if None in synopsis:  # the first source's first block, said once
        lines, level, h1 = parts[0]
        start, end = first_block(lines)
        synopsis = lines[start + 1:end]
        parts[0] = (lines[:start] + lines[end + 1:], level, h1)
    if synopsis:
        roff += [".SH SYNOPSIS", ".nf"] + [line(escape(s)) for s in synopsis] + [".fi"]
    for lines, level, h1 in parts:
        roff += convert(lines, level, h1=h1)
    if see_also:
        roff += [".SH \"SEE ALSO\"", ", ".join(f"\\fB{escape(r.split('(')[0])}\\fR({r.split('(')[1]}"
                                              for r in see_also)]
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text("\n".join(roff) + "\n")


def read_source(src):
    """The markdown lines of a SOURCE, the heading level that makes a
    section, and the name of its level-1 heading (if it has one)."""
    path, _, spec = src.partition("#")
    if not spec:
        return drop_contents(Path(path).read_text().splitlines()), 1, "DESCRIPTION"
    wanted, _, title = spec.partition("=")
    lines, level = section(path, wanted)
    return ["#" * level + " " + (title or lines[0].lstrip("#").strip())] + lines[1:], level, None


def first_block(lines):
    """(start, end) of the first fenced block of lines, fences included."""
    start = next(n for n, t in enumerate(lines) if FENCE.match(t))
    end = next(n for n in range(start + 1, len(lines)) if FENCE.match(lines[n]))
    return start, end


def drop_contents(lines):
    """Without a "Contents" section (a table of links, for the web)."""
    out, skipping, code = [], False, False
    for t in lines:
        code ^= bool(FENCE.match(t))
        if not code and t.startswith("## "):
            skipping = t[3:].strip().lower() == "contents"
        if not skipping:
            out.append(t)
    return out


if __name__ == "__main__":
    main(sys.argv)
