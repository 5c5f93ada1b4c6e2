#!/usr/bin/python3
"""bench/report.py - bench/report.md and its plots from bench/results/*.json.

    /usr/bin/python3 bench/report.py [--results DIR] [--out bench/report.md]

Every result file is validated against schemas/bench-result.schema.json
first (a file that does not conform is an error, not a gap in the report).
The report lists every figure that has a target beside its target, met or
not, then every figure of every file, and draws what has a shape:

- overlap against message size, per engine and for Open MPI (rt-*.json);
- latency of cadrt over Open MPI against message size, per engine;
- overlap and CPU time loss per engine in the qemu VM (kernel-vm.json);
- the interpreter against native code (ops.json, core.json).

The report is the only generated document: the README links to it and
holds no figures of its own.
Plots are PNGs in bench/report/ (matplotlib from Debian, Agg backend).
"""

import argparse
import json
import math
import sys
from collections import defaultdict
from pathlib import Path

import jsonschema

ROOT = Path(__file__).resolve().parents[1]


def load(results_dir: Path):
    schema = json.loads((ROOT / "schemas" / "bench-result.schema.json").read_text())
    runs = []
    for path in sorted(results_dir.glob("*.json")):
        try:
            doc = json.loads(path.read_text())
            jsonschema.validate(doc, schema)
        except (json.JSONDecodeError, jsonschema.ValidationError) as e:
            raise SystemExit(f"report.py: {path}: not a benchmark result: {str(e).splitlines()[0]}")
        runs.append((path, doc))
    if not runs:
        raise SystemExit(f"report.py: no results in {results_dir} (run `make bench`)")
    return runs


def num(x, unit=""):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "—"
    a = abs(x)
    s = f"{x:.0f}" if a >= 100 else f"{x:.2f}" if a >= 1 or a == 0 else f"{x:.3g}"
    return f"{s}{unit}"


def fmt(r):
    u = {"%": " %", "x": "×", "ratio": "×", "x native": "× native"}.get(r["unit"], " " + r["unit"])
    return f"{num(r['median'], u)} ({num(r['min'])}–{num(r['max'])})"


def met(r, cap=None):
    """cap: the median of the physical cap of an overlap figure, if known;
    a target above it is marked as such."""
    if "target" not in r:
        return ""
    op, val = r["target"].split()
    ok = r["median"] <= float(val) if op == "<=" else r["median"] >= float(val)
    if ok:
        return "**met**"
    return "not met (over the cap)" if cap is not None and op == ">=" and cap < float(val) else "not met"


def caps_of(doc):
    """An rt run's overlap caps: (collective, bytes) -> median."""
    return {(r["params"]["collective"], r["params"]["bytes"]): r["median"] for r in doc["results"]
            if r["params"].get("of") == "cap" and "collective" in r["params"]}


def cap_for(caps, r):
    p = r["params"]
    return caps.get((p.get("collective"), p.get("bytes"))) if r["name"].startswith("overlap ") else None


COLORS = {"poll-nocma": "tab:olive", "thread-nopush": "tab:cyan", "kernel-nosplit": "tab:pink", "kernel-defer0": "tab:brown", "kernel-defer1": "tab:purple", "kernel": "tab:red", "poll": "tab:blue", "thread": "tab:green", "signal": "tab:orange",
          "Open MPI": "black"}


def style(label, styles):
    """The label's keywords, with the same colour for an engine in every plot."""
    st = dict((styles or {}).get(label, {}))
    if "color" not in st:
        for key, c in COLORS.items():
            if key in label:
                st["color"] = c
                break
    return st


def plot(name, title, xlabel, ylabel, lines, out_dir, logx=True, hline=None, styles=None, logy=False):
    """lines: {label: [(x, median, min, max)]}; styles: {label: matplotlib keywords}."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    if not lines:
        return None
    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=90)
    for label, pts in sorted(lines.items()):
        xs = [max(p[0], 0.5) for p in pts]
        ax.errorbar(xs, [p[1] for p in pts], yerr=[[p[1] - p[2] for p in pts], [p[3] - p[1] for p in pts]],
                    marker="o", markersize=4, capsize=3, label=label, **style(label, styles))
    if hline is not None:
        ax.axhline(hline[0], color="grey", linestyle="--", linewidth=1, label=hline[1])
    if logx:
        ax.set_xscale("log", base=2)
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    return save(fig, ax, name, title, ylabel, out_dir)


def save(fig, ax, name, title, ylabel, out_dir, grid_axis="both"):
    ax.set_title(title)
    ax.set_ylabel(ylabel)
    ax.grid(True, axis=grid_axis, alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    return write_png(fig, name, out_dir)


def write_png(fig, name, out_dir):
    import matplotlib.pyplot as plt
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{name}.png"
    fig.savefig(path)
    plt.close(fig)
    return path


def bars(name, title, ylabel, groups, out_dir, hline=None, logy=False):
    """groups: {group: {bar label: (median, min, max)}}"""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    if not groups:
        return None
    labels = sorted({b for g in groups.values() for b in g})
    fig, ax = plt.subplots(figsize=(7.2, 4.0), dpi=90)
    width = 0.8 / max(1, len(labels))
    gnames = list(groups)
    for i, b in enumerate(labels):
        xs, ys, lo, hi = [], [], [], []
        for j, g in enumerate(gnames):
            if b in groups[g]:
                m, mn, mx = groups[g][b]
                xs.append(j + i * width)
                ys.append(m)
                lo.append(m - mn)
                hi.append(mx - m)
        ax.bar(xs, ys, width, yerr=[lo, hi], capsize=2, label=b, **style(b, {}))
    if hline is not None:
        ax.axhline(hline[0], color="grey", linestyle="--", linewidth=1, label=hline[1])
    if logy:
        ax.set_yscale("log")
    ax.set_xticks([j + width * (len(labels) - 1) / 2 for j in range(len(gnames))])
    ax.set_xticklabels(gnames, fontsize="small")
    return save(fig, ax, name, title, ylabel, out_dir, grid_axis="y")


ENGINES = ("kernel", "kernel-nosplit", "kernel-defer0", "kernel-defer1", "poll", "thread", "signal", "thread-nopush",
           "thread-nosplit", "poll-nocma")
RT_COLLS = ("ibcast", "ireduce", "iallreduce", "igather", "iscatter", "iallgather", "ialltoall",
            "ireduce_scatter_block", "ibarrier")


def triple(r):
    return (r["median"], r["min"], r["max"])


def engine_key(e):
    return (ENGINES.index(e) if e in ENGINES else len(ENGINES), e)


def by_benchmark(runs, name):
    """The runs of one benchmark, ordered by engine."""
    out = [(p, d) for p, d in runs if d["benchmark"] == name]
    return sorted(out, key=lambda pd: engine_key(pd[1]["engine"]))


def grid(name, title, panels, out_dir, ylabel, logy=False, hline=None):
    """panels: [(panel title, {label: [(x, med, lo, hi)]}, {label: style})] on a grid of log2 x axes."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    panels = [p for p in panels if p[1]]
    if not panels:
        return None
    cols = 3
    rows = (len(panels) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(12, 3.2 * rows), dpi=80, squeeze=False)
    for ax in axes.flat[len(panels):]:
        ax.axis("off")
    for ax, (ptitle, lines, styles) in zip(axes.flat, panels):
        for label, pts in sorted(lines.items()):
            xs = [max(p[0], 0.5) for p in pts]
            ax.errorbar(xs, [p[1] for p in pts], yerr=[[p[1] - p[2] for p in pts], [p[3] - p[1] for p in pts]],
                        marker="o", markersize=3, capsize=2, label=label, **style(label, styles))
        if hline is not None:
            ax.axhline(hline, color="grey", linestyle="--", linewidth=1)
        ax.set_xscale("log", base=2)
        if logy:
            ax.set_yscale("log")
        ax.set_title(ptitle, fontsize="medium")
        ax.grid(True, alpha=0.3)
    axes.flat[0].set_ylabel(ylabel)
    axes.flat[0].legend(fontsize="x-small")
    fig.suptitle(title)
    fig.tight_layout()
    return write_png(fig, name, out_dir)


def rt_figures(runs, out_dir):
    rt = by_benchmark(runs, "rt")
    made = []
    if not rt:
        return made
    ref = rt[0][1]  # Open MPI is measured in every engine's run: its curves from one of them
    for coll in ("ibcast", "iallreduce", "ialltoall", "igather"):
        lines, styles = defaultdict(list), {}
        for _, doc in rt:
            for r in doc["results"]:
                p = r["params"]
                if not r["name"].startswith("overlap ") or p.get("collective") != coll or p.get("late_ns"):
                    continue  # (the late root: in the tables only)
                if p["of"] == "openmpi" and doc is not ref:
                    continue
                if p["of"] == "cap":  # the physical cap, dotted
                    label = f"cap, {doc['engine']}"
                    lines[label].append((p["bytes"], *triple(r)))
                    styles[label] = {"linestyle": ":"}
                    continue
                who = "Open MPI" if p["of"] == "openmpi" else f"cadrt {doc['engine']}"
                label = who + (f", {p['tests']} tests" if p.get("tests") else "")
                lines[label].append((p["bytes"], *triple(r)))
                styles[label] = {"linestyle": "--" if p.get("tests") else "-"}
                if who == "Open MPI":
                    styles[label]["color"] = "black"
        lines = {k: sorted(v) for k, v in lines.items()}
        made.append(plot(f"overlap-{coll}", f"{coll}, {ref['results'][0]['params'].get('ranks', 2)} ranks: OSU "
                         "overlap (no tests; dashed: 8; dotted: cap)", "bytes", "overlap %", lines,
                         out_dir, hline=(40, "target ≥ 40 % (≥ 64 KiB)"), styles=styles))
    ratio, bw = [], []
    for coll in RT_COLLS:
        lat, bwl, styles, lstyles = defaultdict(list), defaultdict(list), {}, {}
        for _, doc in rt:
            for r in doc["results"]:
                p = r["params"]
                if p.get("collective") != coll:
                    continue
                if r["name"].startswith("latency ratio ") and p["of"] == "cadrt/openmpi":
                    lat[f"cadrt {doc['engine']}"].append((p["bytes"], *triple(r)))
                elif r["name"].startswith("latency ratio ") and p["of"] == "cadrt-persistent/openmpi-persistent":
                    label = f"cadrt {doc['engine']}, persistent"
                    lat[label].append((p["bytes"], *triple(r)))
                    lstyles[label] = {"linestyle": "--"}
                elif r["name"].startswith("latency ratio ") and p["of"] == "cadrt-blocking/openmpi-blocking":
                    label = f"cadrt {doc['engine']}, blocking"
                    lat[label].append((p["bytes"], *triple(r)))
                    lstyles[label] = {"linestyle": ":"}
                elif p["of"].endswith("-persistent") or p["of"] == "cadrt-blocking":
                    continue  # the bandwidth plot: the non-blocking forms and Open MPI's blocking one
                elif r["name"].startswith("latency ") and r["unit"] == "us" and p["bytes"] > 0:
                    if p["of"] != "cadrt" and doc is not ref:
                        continue
                    label = f"cadrt {doc['engine']}" if p["of"] == "cadrt" else \
                        {"openmpi": "Open MPI I*", "openmpi-blocking": "Open MPI blocking"}[p["of"]]
                    # MB/s = bytes / µs; min and max swap
                    bwl[label].append((p["bytes"], p["bytes"] / r["median"], p["bytes"] / r["max"],
                                       p["bytes"] / r["min"]))
                    if p["of"] != "cadrt":
                        styles[label] = {"color": "black", "linestyle": "-" if p["of"] == "openmpi" else ":"}
        ratio.append((coll, {k: sorted(v) for k, v in lat.items()}, lstyles))
        bw.append((coll, {k: sorted(v) for k, v in bwl.items()}, styles))
    made.append(grid("latency-ratio", "latency (call + wait), cadrt / Open MPI's MPI_I* (lower is better; "
                     "dashed: persistent, start + wait, against Open MPI's; dotted: blocking against "
                     "Open MPI's blocking)", ratio,
                     out_dir, "ratio", hline=1.0))
    made.append(grid("bandwidth", "bandwidth: bytes / latency, MB/s (higher is better)", bw, out_dir, "MB/s",
                     logy=True))
    return made


def codelet_figures(runs, out_dir):
    cl = by_benchmark(runs, "codelets")
    made = []
    if not cl:
        return made
    ref = cl[0][1]
    kinds = {"availability": ("availability", "availability (SMB method), 2 ranks", "available %", None),
             "cpu loss": ("cpu-loss", "CPU time loss (KACC codelet), 2 ranks on the host", "CPU lost %", None),
             "matvec overlap": ("matvec", "ialltoall overlapped with a matrix-vector product", "overlap %", None),
             "rendezvous root ratio": ("rendezvous", "root's time in ibcast while the other computes 50 ms "
                                       "(PIOMan test), ÷ pure latency", "× pure latency (log)", True)}
    for prefix, (name, title, ylabel, logy) in kinds.items():
        groups = defaultdict(dict)
        for _, doc in cl:
            for r in doc["results"]:
                p = r["params"]
                if not r["name"].startswith(prefix + " "):
                    continue
                if p.get("of") == "openmpi" and doc is not ref:
                    continue
                who = "Open MPI" if p.get("of") == "openmpi" else doc["engine"]
                group = " ".join(w for w in r["name"][len(prefix) + 1:].split()
                                 if w not in ("cadrt", "openmpi"))
                groups[group][who] = triple(r)
        made.append(bars(name, title, ylabel, dict(groups), out_dir, logy=logy))
    return made


def segment_figures(runs, out_dir):
    """seg_bench: the measured curve and the LogGP model's per message size,
    the model's optimum as a vertical line."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    made = []
    for _, doc in by_benchmark(runs, "segments"):
        curves, optimum = defaultdict(list), {}
        for r in doc["results"]:
            p = r["params"]
            if r["name"].startswith("model optimum "):
                optimum[p["bytes"]] = r["median"]
            if not isinstance(p.get("seg"), int) or r["unit"] != "us" or r["name"].startswith("pingpong "):
                continue
            ranks = p.get("ranks", "")
            kind = "LogGP model" if r["name"].startswith("model ") else "measured"
            curves[(p["bytes"], kind)].append((p["seg"], *triple(r)))
        if not curves:
            continue
        fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=90)
        colors = {}
        for (n, kind), pts in sorted(curves.items()):
            pts.sort()
            c = colors.setdefault(n, f"C{len(colors)}")
            ax.errorbar([q[0] for q in pts], [q[1] for q in pts],
                        yerr=[[q[1] - q[2] for q in pts], [q[3] - q[1] for q in pts]], marker="o", markersize=4,
                        capsize=3, color=c, linestyle="--" if kind != "measured" else "-",
                        label=f"{kind}, {n // 1024} KiB")
            if kind == "measured" and n in optimum:
                ax.axvline(optimum[n], color=c, linestyle=":", linewidth=1)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("segment bytes (dotted: the model's optimum)")
        made.append(save(fig, ax, f"segments-{doc['engine']}",
                         f"chain pipeline broadcast, {ranks} ranks, {doc['engine']} engine", "µs", out_dir))
    return made


def verifier_figure(runs, out_dir):
    """cadc_bench's verifier curves: time against P (n = 1), time against
    n at a fixed P (the segmented algorithms), peak bytes per message
    against P."""
    by_p, by_n, memory = defaultdict(list), defaultdict(list), defaultdict(list)
    for _, doc in by_benchmark(runs, "cadc"):
        for r in doc["results"]:
            name, params = r["name"], r["params"]
            if not name.startswith("verify ") or "P" not in params:
                continue
            alg = name.split()[1]
            if r["unit"] == "s" and params.get("n") == 1:
                by_p[alg].append((params["P"], *triple(r)))
            elif r["unit"] == "s":
                setting = " ".join(k if v is True else f"{k}={v}" for k, v in sorted(params.items())
                                   if k not in ("n", "messages") and v is not False)
                by_n[f"{alg} {setting}"].append((params["n"], *triple(r)))
            elif r["unit"] == "B":
                memory[alg].append((params["P"], *triple(r)))
    made = []
    if by_p:
        made.append(plot("verifier", "cadc verify: time against P", "P (ranks)", "seconds",
                         {k: sorted(v) for k, v in by_p.items()}, out_dir, logy=True))
    if by_n:
        made.append(plot("verifier-n", "cadc verify: time against n", "n (elements per rank)", "seconds",
                         {k: sorted(v) for k, v in by_n.items()}, out_dir, logy=True))
    if memory:
        made.append(plot("verifier-memory", "cadc verify: peak memory per message", "P (ranks)", "bytes",
                         {k: sorted(v) for k, v in memory.items()}, out_dir))
    return made


def figures(runs, out_dir):
    made = rt_figures(runs, out_dir)
    made += codelet_figures(runs, out_dir)
    kv = [(p, d) for p, d in runs if d["benchmark"] == "kernel-vm"]
    if kv:
        ov, loss = defaultdict(dict), defaultdict(dict)
        for _, doc in kv:
            for r in doc["results"]:
                p = r["params"]
                if " overlap " in r["name"] and "of cap" not in r["name"]:
                    ov[f"{p['collective']} {p['bytes'] // 1024} KiB"][p["engine"]] = triple(r)
                parts = (" floor ", " in start ", " bare ioctl ")
                if " cpu loss " in r["name"] and not any(w in r["name"] for w in parts):
                    loss[f"{p['bytes'] / 1000:g} kB {p['matrix']}×{p['matrix']}"][p["engine"]] = triple(r)
        made.append(bars("vm-overlap", "overlap per engine in qemu (OSU, no test calls)", "overlap %", ov, out_dir))
        made.append(bars("vm-cpu-loss", "CPU time loss (KACC codelet) per engine in qemu", "CPU lost %", loss,
                         out_dir, hline=(10, "kernel target ≤ 10 %")))
    made += segment_figures(runs, out_dir)
    made += verifier_figure(runs, out_dir)
    vm = defaultdict(dict)
    for _, doc in runs:
        for r in doc["results"]:
            if r["unit"] == "x native":
                vm[r["name"].split(" (")[0].replace(" vs native", "")][doc["benchmark"]] = triple(r)
    made.append(bars("interpreter", "reductions against native C (1 MiB)", "× native (higher is better)",
                     dict(sorted(vm.items())), out_dir, hline=(0.5, "VM target ≥ 0.5×")))
    return [m for m in made if m]


def report(runs, out: Path, plots):
    lines = ["# Benchmark report", "",
             "Generated by `bench/report.py` from `bench/results/*.json` (run `make bench`; "
             "`BENCH_QUICK=1 make bench` for a short run). Every figure is a ratio or a percentage against a "
             "reference measured in the same run, or a time whose reference is in the same file; medians of "
             "the repetitions, with min–max.", "",
             "## Targets", "", targets_table(runs, "results/"), ""]
    for name, body in blocks(runs, "results/").items():
        if name in SECTIONS:
            lines += [f"## {SECTIONS[name]}", "", body, ""]
    lines += ["## Plots", ""]
    for p in plots:
        lines += [f"![{p.stem}](report/{p.name})", ""]
    lines += ["## Every figure", ""]
    for path, doc in runs:
        m = doc["machine"]
        lines += [f"### `{path.name}` — {doc['benchmark']} ({doc['engine']})", "",
                  f"{doc['date']}, {m['cpu']}, {m['cores']} cores, Linux {m['kernel']}.", "",
                  f"Method: {doc['method']}", "",
                  "| Figure | Unit | Median | Min | Max | Target | |", "|---|---|---|---|---|---|---|"]
        caps = caps_of(doc) if doc["benchmark"] == "rt" else {}
        for r in doc["results"]:
            lines.append(f"| {r['name']} | {r['unit']} | {num(r['median'])} | {num(r['min'])} | {num(r['max'])} | "
                         f"{r.get('target', '').replace('<=', '≤').replace('>=', '≥')} | {met(r, cap_for(caps, r))} |")
        lines.append("")
    out.write_text("\n".join(lines))


def pivot(runs, benchmark, keep, prefix, label=lambda name: name,
          colname=lambda doc, r: "measured" if doc["engine"] == "none" else doc["engine"]):
    """A table of one benchmark's figures: a row per figure (keep(r) true),
    a column per engine (or what colname says), median (min–max), the
    target in its own column and met / not met per cell."""
    rows, cols, files = {}, [], {}
    for path, doc in by_benchmark(runs, benchmark):
        caps = caps_of(doc) if benchmark == "rt" else {}
        for r in doc["results"]:
            if not keep(r):
                continue
            c = colname(doc, r)
            if c not in cols:
                cols.append(c)
                files[c] = path.name
            row = rows.setdefault(label(r["name"]), {"target": r.get("target", "")})
            # A column several files fill (Open MPI, measured in each
            # engine's run): the first file's, the one its header links.
            row.setdefault(c, fmt(r) + (f" {met(r, cap_for(caps, r))}" if "target" in r else ""))
    if not rows:
        return "(no results yet: run `make bench`)"
    cols.sort(key=lambda c: (c == "Open MPI", engine_key(c)))
    head = "| Figure | Target | " + " | ".join(f"[{c}]({prefix}{files[c]})" for c in cols) + " |"
    out = [head, "|---|---|" + "---|" * len(cols)]
    for name, row in rows.items():
        t = row["target"].replace("<=", "≤").replace(">=", "≥")
        out.append(f"| {name} | {t} | " + " | ".join(row.get(c, "") for c in cols) + " |")
    return "\n".join(out)


def strip_engine(name):
    for e in ENGINES:
        if name.startswith(e + "/"):
            return "÷ " + name[len(e) + 1:].replace(" ", ": ", 1)
        if name.startswith(e + " "):
            return name[len(e) + 1:]
    return name


# The collectives the runtime issue sets targets for, and the size from
# which its overlap target holds: the report's rt tables show these.
RT_TARGETED = ("ibcast", "iallreduce", "ialltoall")
RT_OVERLAP_MIN = 65536


def rt_overlapped(p):
    """A targeted collective at a size the overlap target covers."""
    return p["bytes"] >= RT_OVERLAP_MIN and p["collective"] in RT_TARGETED


def blocks(runs, prefix):
    """The report's summary tables, by name (SECTIONS gives their headings)."""
    def rt_keep(r):
        p = r["params"]
        if r["name"].startswith("latency ratio ") and p["of"] == "cadrt/openmpi":
            if p["collective"] == "ialltoall_inplace":
                return False  # (with the other forms, below)
            return p["collective"] in RT_TARGETED or p["bytes"] in (8, 1 << 20, 0)
        if r["name"].startswith("overlap ") and p["of"] in ("cadrt", "cap"):
            return p["bytes"] >= RT_OVERLAP_MIN
        if r["name"].startswith("beyond "):
            return rt_overlapped(p)
        return False

    def persistent_keep(r):  # the other forms: what a persistent request saves, the blocking ones
        p = r["params"]
        if p.get("collective") == "ialltoall_inplace":  # the in-place form against Open MPI's
            return r["name"].startswith("latency ratio ialltoall_inplace") and p["bytes"] in (8, 65536, 1 << 20)
        return r["name"].startswith(("latency ratio persistent", "latency ratio blocking")) and (
            p["bytes"] in (0, 8) or (p["bytes"] == 1 << 20 and p["collective"] in RT_TARGETED))

    def ompi_col(doc, r):
        return "Open MPI" if r["params"].get("of") == "openmpi" else doc["engine"]

    def cl_keep(r):
        return not r["name"].endswith(" openmpi") or True
    return {
        "targets": targets_table(runs, prefix),
        "rt": pivot(runs, "rt", rt_keep, prefix, label=lambda n: n.replace(" cadrt", "")),
        "rt-persistent": pivot(runs, "rt", persistent_keep, prefix),
        "codelets": pivot(runs, "codelets", cl_keep, prefix,
                          label=lambda n: n.replace(" cadrt", "").replace(" openmpi", ""), colname=ompi_col),
        "kernel-vm": pivot(runs, "kernel-vm", lambda r: True, prefix, label=strip_engine,
                           colname=lambda doc, r: r["params"].get("engine", doc["engine"])),
        "segments": pivot(runs, "segments", lambda r: not isinstance(r["params"].get("seg"), int)
                          and not r["name"].startswith("pingpong "), prefix),
        "compiler": pivot(runs, "cadc", lambda r: True, prefix),
        "core": pivot(runs, "core", lambda r: True, prefix),
        "ops": pivot(runs, "ops", lambda r: True, prefix),
        "simulate": simulate_table(runs, prefix),
    }


SECTIONS = {
    "rt": "The runtime against Open MPI, per engine (`rt_bench`)",
    "rt-persistent": "Persistent, blocking and in-place collectives (`rt_bench`)",
    "codelets": "Overlap codelets: availability, CPU loss, background progress (`rt_codelets`)",
    "kernel-vm": "The kernel engine against the others, in qemu (`kernel_vm.py`)",
    "segments": "Pipeline segment size against the LogGP optimum (`seg_bench`)",
    "simulate": "`cadc simulate` against measurement (`sim_check.py`)",
    "ops": "User-defined operators: the interpreter against native code (`op_bench`)",
    "core": "The core (`core_bench`)",
    "compiler": "The compiler (`cadc_bench`)",
}


def simulate_table(runs, prefix):
    """bench/sim_check.py's run: per collective and size, for each P, what
    choosing by cadc simulate costs (pick/best), what the standard rules'
    choice costs (rules/best) and the range of the model's error over the
    algorithms (simulated/measured, medians)."""
    docs = by_benchmark(runs, "simulate")
    if not docs:
        return "(no results yet: run `make bench`)"
    path, doc = docs[-1]
    picks, rules, errors, ranks = {}, {}, {}, []
    for r in doc["results"]:
        p = r["params"]
        if "collective" not in p:
            continue
        key = (p["collective"], p["bytes"])
        if p["ranks"] not in ranks:
            ranks.append(p["ranks"])
        if r["name"].startswith("pick/best "):
            picks[key, p["ranks"]] = r
        elif r["name"].startswith("rules/best "):
            rules[key, p["ranks"]] = r
        elif r["name"].startswith("simulated/measured "):
            errors.setdefault((key, p["ranks"]), []).append((r["median"], p["algorithm"]))
    head = "| Collective | " + " | ".join(f"P = {P}: pick/best | rules/best | simulated/measured" for P in ranks) + " |"
    out = [f"[{path.name}]({prefix}{path.name}), engine {doc['engine']}, {doc['machine']['cores']} cores:", "",
           head, "|---|" + "---|---|---|" * len(ranks)]
    for key in dict.fromkeys(k for k, _ in errors):
        cells = []
        for P in ranks:
            e = sorted(errors.get((key, P), []))
            cells.append(fmt(picks[key, P]) if (key, P) in picks else "(one algorithm)")
            cells.append(fmt(rules[key, P]) if (key, P) in rules else "")
            cells.append("" if not e else f"{num(e[0][0])}×" if len(e) == 1 else f"{num(e[0][0])}–{num(e[-1][0])}×")
        out.append(f"| {key[0]} {size_label(key[1])} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def size_label(b):
    return f"{b >> 20} MiB" if b >= 1 << 20 else f"{b >> 10} KiB" if b >= 1024 else f"{b} B"


def targets_table(runs, prefix):
    """Every figure with a target; rt_bench's per engine side by side."""
    lines = ["| Benchmark | Figure | Target | Measured: median (min–max) | |", "|---|---|---|---|---|"]
    for path, doc in runs:
        if doc["benchmark"] == "rt":
            continue
        for r in doc["results"]:
            if "target" in r:
                t = r["target"].replace("<=", "≤").replace(">=", "≥")
                lines.append(f"| [{path.stem}]({prefix}{path.name}) | {r['name']} | {t} | {fmt(r)} | {met(r)} |")
    def rt_keep(r):  # the targets, and beside each overlap target its physical cap and the time beyond
        p = r["params"]
        beside = p.get("of") == "cap" or (r["name"].startswith("beyond ") and not p.get("tests"))
        return "target" in r or (beside and rt_overlapped(p))
    rt = pivot(runs, "rt", rt_keep, prefix, label=lambda n: n.replace(" cadrt", ""))
    return "\n".join(lines) + ("\n\nThe runtime against Open MPI (`rt_bench`), per engine (`thread-nopush`: `CADRT_PUSH=0`, "
                                     "every large message by the receiver's single copy or a grant; `thread-nosplit`: "
                                     "that and `CADRT_SPLIT=0`; "
                                     "`poll-nocma`: neither uses single copy, cadrt with `CADRT_CMA=0` and Open MPI "
                                     "with `--mca btl_vader_single_copy_mechanism none`, as where CMA is not "
                                     "permitted):\n\n") + rt


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", type=Path, default=ROOT / "bench" / "results")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "report.md")
    a = ap.parse_args()
    runs = load(a.results)
    plots = figures(runs, a.out.parent / "report")
    for stale in set((a.out.parent / "report").glob("*.png")) - set(plots):
        stale.unlink()  # a plot no figure makes any more
    report(runs, a.out, plots)
    print(f"report.py: {a.out} ({sum(len(d['results']) for _, d in runs)} figures from {len(runs)} files, "
          f"{len(plots)} plots)")


if __name__ == "__main__":
    sys.exit(main())
