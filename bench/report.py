#!/usr/bin/python3
"""bench/report.py - bench/report.md and its plots from bench/results/*.json.

    /usr/bin/python3 bench/report.py [--results DIR] [--out bench/report.md] [--readme README.md]

Every result file is validated against schemas/bench-result.schema.json
first (a file that does not conform is an error, not a gap in the report).
The report lists every figure that has a target beside its target, met or
not, then every figure of every file, and draws what has a shape:

- overlap against message size, per engine and for Open MPI (rt-*.json);
- latency of cadrt over Open MPI against message size, per engine;
- overlap and CPU time loss per engine in the qemu VM (kernel-vm.json);
- the interpreter against native code (ops.json, core.json).

With --readme, the block between <!-- bench:targets:begin --> and
<!-- bench:targets:end --> in the README is replaced by the targets table,
so the README states each target beside the latest measured figure.
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
BEGIN, END = "<!-- bench:targets:begin -->", "<!-- bench:targets:end -->"


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


def met(r):
    if "target" not in r:
        return ""
    op, val = r["target"].split()
    ok = r["median"] <= float(val) if op == "<=" else r["median"] >= float(val)
    return "**met**" if ok else "not met"


def targets_table(runs, prefix):
    """prefix: the path from the document to bench/results/."""
    lines = ["| Benchmark | Figure | Target | Measured: median (min–max) | |", "|---|---|---|---|---|"]
    for path, doc in runs:
        for r in doc["results"]:
            if "target" in r:
                t = r["target"].replace("<=", "≤").replace(">=", "≥")
                lines.append(f"| [{path.stem}]({prefix}{path.name}) | {r['name']} | {t} | {fmt(r)} | {met(r)} |")
    return "\n".join(lines)


def series(runs, pick):
    """{line label: [(x, median, min, max)]} from pick(doc, result) ->
    (label, x) or None."""
    out = defaultdict(list)
    for _, doc in runs:
        for r in doc["results"]:
            k = pick(doc, r)
            if k:
                out[k[0]].append((k[1], r["median"], r["min"], r["max"]))
    return {k: sorted(v) for k, v in out.items()}


def plot(name, title, xlabel, ylabel, lines, out_dir, logx=True, hline=None):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    if not lines:
        return None
    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=90)
    for label, pts in sorted(lines.items()):
        xs = [p[0] for p in pts]
        ax.errorbar(xs, [p[1] for p in pts], yerr=[[p[1] - p[2] for p in pts], [p[3] - p[1] for p in pts]],
                    marker="o", capsize=3, label=label)
    if hline is not None:
        ax.axhline(hline[0], color="grey", linestyle="--", linewidth=1, label=hline[1])
    if logx:
        ax.set_xscale("log", base=2)
    ax.set_xlabel(xlabel)
    return save(fig, ax, name, title, ylabel, out_dir)


def save(fig, ax, name, title, ylabel, out_dir, grid_axis="both"):
    import matplotlib.pyplot as plt
    ax.set_title(title)
    ax.set_ylabel(ylabel)
    ax.grid(True, axis=grid_axis, alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{name}.png"
    fig.savefig(path)
    plt.close(fig)
    return path


def bars(name, title, ylabel, groups, out_dir, hline=None):
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
        ax.bar(xs, ys, width, yerr=[lo, hi], capsize=2, label=b)
    if hline is not None:
        ax.axhline(hline[0], color="grey", linestyle="--", linewidth=1, label=hline[1])
    ax.set_xticks([j + width * (len(labels) - 1) / 2 for j in range(len(gnames))])
    ax.set_xticklabels(gnames, fontsize="small")
    return save(fig, ax, name, title, ylabel, out_dir, grid_axis="y")


def figures(runs, out_dir):
    made = []
    rt = [(p, d) for p, d in runs if d["benchmark"] == "rt"]
    for coll in ("ibcast", "iallreduce", "ialltoall"):
        def overlap(doc, r, coll=coll):
            p = r["params"]
            if r["name"].startswith("overlap ") and p.get("collective") == coll:
                return ("Open MPI" if p["of"] == "openmpi" else f"cadrt {doc['engine']}"), p["bytes"]
            return None
        lines = series(rt, overlap)
        # Open MPI's own figure is measured in every engine's run: one line.
        lines = {k: v for k, v in lines.items()}
        made.append(plot(f"overlap-{coll}", f"{coll}: overlap (OSU, no test calls), 2 ranks",
                         "bytes", "overlap %", lines, out_dir, hline=(40, "target ≥ 40 % (≥ 64 KiB)")))

        def latency(doc, r, coll=coll):
            p = r["params"]
            if r["name"].startswith("latency ratio ") and p.get("collective") == coll:
                return f"cadrt {doc['engine']}", p["bytes"]
            return None
        made.append(plot(f"latency-{coll}", f"{coll}: latency, cadrt / Open MPI, 2 ranks", "bytes",
                         "ratio (lower is better)", series(rt, latency), out_dir, hline=(1.0, "Open MPI")))
    kv = [(p, d) for p, d in runs if d["benchmark"] == "kernel-vm"]
    if kv:
        ov, loss = defaultdict(dict), defaultdict(dict)
        for _, doc in kv:
            for r in doc["results"]:
                p = r["params"]
                if " overlap " in r["name"] and "of cap" not in r["name"]:
                    ov[f"{p['collective']} {p['bytes'] // 1024} KiB"][p["engine"]] = (r["median"], r["min"], r["max"])
                if " cpu loss " in r["name"] and " floor " not in r["name"]:
                    loss[f"{p['bytes'] / 1000:g} kB {p['matrix']}×{p['matrix']}"][p["engine"]] = (
                        r["median"], r["min"], r["max"])
        made.append(bars("vm-overlap", "overlap per engine in qemu (OSU, no test calls)", "overlap %", ov, out_dir))
        made.append(bars("vm-cpu-loss", "CPU time loss (KACC codelet) per engine in qemu", "CPU lost %", loss,
                         out_dir, hline=(10, "kernel target ≤ 10 %")))
    vm = defaultdict(dict)
    for _, doc in runs:
        for r in doc["results"]:
            if r["unit"] == "x native":
                vm[r["name"].split(" (")[0].replace(" vs native", "")][doc["benchmark"]] = (r["median"], r["min"], r["max"])
    made.append(bars("interpreter", "reductions against native C (1 MiB)", "× native (higher is better)",
                     dict(sorted(vm.items())), out_dir, hline=(0.5, "VM target ≥ 0.5×")))
    return [m for m in made if m]


def report(runs, out: Path, plots):
    lines = ["# Benchmark report", "",
             "Generated by `bench/report.py` from `bench/results/*.json` (run `make bench`; "
             "`BENCH_QUICK=1 make bench` for a short run). Every figure is a ratio or a percentage against a "
             "reference measured in the same run; medians of the repetitions, with min–max.", "",
             "## Targets", "", targets_table(runs, "results/"), "", "## Plots", ""]
    for p in plots:
        lines += [f"![{p.stem}](report/{p.name})", ""]
    lines += ["## Every figure", ""]
    for path, doc in runs:
        m = doc["machine"]
        lines += [f"### `{path.name}` — {doc['benchmark']} ({doc['engine']})", "",
                  f"{doc['date']}, {m['cpu']}, {m['cores']} cores, Linux {m['kernel']}.", "",
                  f"Method: {doc['method']}", "",
                  "| Figure | Unit | Median | Min | Max | Target | |", "|---|---|---|---|---|---|---|"]
        for r in doc["results"]:
            lines.append(f"| {r['name']} | {r['unit']} | {num(r['median'])} | {num(r['min'])} | {num(r['max'])} | "
                         f"{r.get('target', '').replace('<=', '≤').replace('>=', '≥')} | {met(r)} |")
        lines.append("")
    out.write_text("\n".join(lines))


def update_readme(readme: Path, runs):
    text = readme.read_text()
    if BEGIN not in text or END not in text:
        raise SystemExit(f"report.py: {readme} has no {BEGIN} ... {END} block")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    readme.write_text(head + BEGIN + "\n" + targets_table(runs, "bench/results/") + "\n" + END + tail)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", type=Path, default=ROOT / "bench" / "results")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "report.md")
    ap.add_argument("--readme", type=Path)
    a = ap.parse_args()
    runs = load(a.results)
    plots = figures(runs, a.out.parent / "report")
    report(runs, a.out, plots)
    if a.readme:
        update_readme(a.readme, runs)
    print(f"report.py: {a.out} ({sum(len(d['results']) for _, d in runs)} figures from {len(runs)} files, "
          f"{len(plots)} plots)")


if __name__ == "__main__":
    sys.exit(main())
