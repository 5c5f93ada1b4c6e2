#!/usr/bin/python3
"""cadc simulate against measurement: each standard algorithm, forced one by
one under cadrun (bench/alg_bench.c), beside what `cadc simulate` predicts
for the same instance with the costs alg_bench measured in the same
repetition (alpha and beta of the rendezvous and alpha of an eager message
from a one-message ping-pong, gamma from a sum loop), the ranks on this machine's CPUs (--cpus, as cadrun --bind core
places them).

    bench/sim_check.py BUILD_DIR --json bench/results/simulate.json [--ranks 2,3,4]

Figures (params collective, algorithm, bytes, ranks; every repetition):
  measured <coll> <setting> <size> P=<p>     us, alg_bench's
  simulated <coll> <setting> <size> P=<p>    us, cadc simulate's
  simulated/measured <...>                   the model's error
  pick/best <coll> <size> P=<p>              the measured time of the setting
                                             the model ranks fastest over the
                                             measured fastest: what choosing by
                                             the model would cost (1 = it picks
                                             the winner)
  rules/best <coll> <size> P=<p>             the same for the standard library's
                                             rules (what cadrt runs without a
                                             setting; params: what they chose)
  alpha P=<p>, beta P=<p>, gamma P=<p>,      the costs of each run
  alpha eager P=<p>, switch P=<p>
BENCH_QUICK=1 in the environment: alg_bench's quick mode.

The hierarchical broadcast is left out: its instance depends on the
topology cadrt reads at run time, which the flat one of cadc simulate is
not.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# (collective, setting): CADRT_ALGORITHM_<COLL>'s value.  The chain with the
# rules' segment (its file's default, 64, is for the proofs).
SETTINGS = [
    ("bcast", "bcast_binomial"), ("bcast", "bcast_linear"), ("bcast", "bcast_scatter_allgather"),
    ("bcast", "bcast_chain_pipeline:seg=262144"),
    ("reduce", "reduce_binomial"),
    ("allreduce", "allreduce_recursive_doubling"), ("allreduce", "allreduce_ring"),
    ("allreduce", "allreduce_rabenseifner"), ("allreduce", "allreduce_linear"),
    ("allgather", "allgather_ring"), ("allgather", "allgather_recursive_doubling"),
    ("allgather", "allgather_gather_bcast"),
    ("alltoall", "alltoall_rotated"), ("alltoall", "alltoall_bruck"),
]
SIZES = [8, 1024, 65536, 1 << 20]
REDUCING = {"reduce", "allreduce"}


def size_name(b):
    if b >= 1 << 20 and b % (1 << 20) == 0:
        return f"{b >> 20}MiB"
    if b >= 1024 and b % 1024 == 0:
        return f"{b >> 10}KiB"
    return f"{b}B"


def simulate(build, coll, setting, nbytes, ranks, cpus, model=None):
    """cadc simulate's time in us, or None with the reason when the instance
    is not one the algorithm takes (its requires)."""
    name, _, params = setting.partition(":")
    cmd = [str(build / "bin" / "cadc"), "simulate", str(ROOT / "algorithms" / f"{name}.cad"),
           "--ranks", str(ranks), "--cpus", str(cpus), "--json"]
    if coll in REDUCING:
        cmd += ["--size", str(nbytes // 8), "--dtype", "f64", "--op", "sum"]
    else:
        cmd += ["--size", str(nbytes), "--dtype", "u8"]
    for p in filter(None, params.split(",")):
        cmd += ["--param", p]
    if model:
        cmd += ["--alpha", f"{model['alpha'] * 1e3:.6g}", "--beta", f"{model['beta']:.6g}",
                "--gamma", f"{model['gamma']:.6g}", "--alpha-eager", f"{model['alpha eager'] * 1e3:.6g}",
                "--switch", f"{model['switch'] * 1e3:.6g}"]
    run = subprocess.run(cmd, capture_output=True, text=True)
    doc = json.loads(run.stdout) if run.stdout.startswith("{") else {}
    if run.returncode or "time_ns" not in doc:
        return None, (run.stderr.strip() or run.stdout.strip()).splitlines()[0]
    return doc["time_ns"] / 1e3, None


def result(name, unit, reps, params):
    return {"name": name, "unit": unit, "median": statistics.median(reps), "min": min(reps), "max": max(reps),
            "params": params, "repetitions": reps}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("build", type=Path)
    ap.add_argument("--json", type=Path, required=True)
    ap.add_argument("--ranks", default="2,3,4", help="comma-separated numbers of ranks (default 2,3,4)")
    args = ap.parse_args()
    build = args.build.resolve()
    cpus = os.cpu_count() or 1
    results, engine, t0 = [], None, datetime.now(timezone.utc)
    for P in (int(x) for x in args.ranks.split(",")):
        settings = []
        for coll, setting in SETTINGS:
            why = next((w for b in SIZES for _, w in [simulate(build, coll, setting, b, P, cpus)] if w), None)
            if why:
                print(f"sim_check: P={P}: {setting} left out: {why}", file=sys.stderr)
            else:
                settings.append((coll, setting))
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "algorithms.json"
            cmd = [str(build / "bin" / "cadrun"), "-n", str(P), "--bind", "core", str(build / "bin" / "alg_bench"),
                   "--json", str(out), "--sizes", ",".join(map(str, SIZES))]
            cmd += [f"{c}={s}" for c, s in settings]
            cmd += [f"{c}=rules" for c in dict.fromkeys(c for c, _ in settings)]
            print(f"sim_check: P={P}: {' '.join(cmd[5:7])} ... ({len(settings)} settings)", file=sys.stderr)
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
            doc = json.loads(out.read_text())
        engine = doc["engine"]
        figs = {r["name"]: r["repetitions"] for r in doc["results"]}
        by = {r["name"]: r for r in doc["results"]}
        reps = len(figs["alpha"])
        # (A fit of few points can put alpha or beta below 0: priced at 0.)
        costs = ("alpha", "beta", "gamma", "alpha eager", "switch")
        models = [{k: max(0.0, figs[k][i]) for k in costs} for i in range(reps)]
        for k in costs:
            unit = "us" if k.startswith("alpha") or k == "switch" else "ns/B"
            results.append(result(f"{k} P={P}", unit, figs[k], {"ranks": P, "engine": engine}))
        measured, simulated = {}, {}
        for coll, setting in settings:
            for b in SIZES:
                key = (coll, setting, b)
                measured[key] = figs[f"time {coll} {setting} {size_name(b)}"]
                simulated[key] = []
                for m in models:
                    t, why = simulate(build, coll, setting, b, P, cpus, m)
                    if t is None:
                        sys.exit(f"sim_check: cadc simulate {setting} P={P} {b} B with {m}: {why}")
                    simulated[key].append(t)
                label = f"{coll} {setting} {size_name(b)} P={P}"
                params = {"collective": coll, "algorithm": setting, "bytes": b, "ranks": P, "engine": engine}
                results.append(result(f"measured {label}", "us", measured[key], params))
                results.append(result(f"simulated {label}", "us", simulated[key], params))
                results.append(result(f"simulated/measured {label}", "x",
                                      [s / m for s, m in zip(simulated[key], measured[key])], params))
        for coll in dict.fromkeys(c for c, _ in settings):
            mine = [s for c, s in settings if c == coll]
            if len(mine) < 2:
                continue
            for b in SIZES:
                best = [min(measured[(coll, s, b)][i] for s in mine) for i in range(reps)]
                picks = [measured[(coll, min(mine, key=lambda s: simulated[(coll, s, b)][i]), b)][i] / best[i]
                         for i in range(reps)]
                params = {"collective": coll, "bytes": b, "ranks": P, "engine": engine, "algorithms": len(mine)}
                results.append(result(f"pick/best {coll} {size_name(b)} P={P}", "x", picks, params))
                rules = by[f"time {coll} rules {size_name(b)}"]
                results.append(result(f"rules/best {coll} {size_name(b)} P={P}", "x",
                                      [t / m for t, m in zip(rules["repetitions"], best)],
                                      dict(params, algorithm=rules["params"]["ran"])))
    uname = os.uname()
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), "unknown")
    out = {
        "benchmark": "simulate", "date": t0.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": {"cpu": cpu, "cores": cpus, "kernel": uname.release},
        "engine": engine,
        "method": ("bench/alg_bench.c under cadrun -n P --bind core: each standard algorithm forced with "
                   "CADRT_ALGORITHM_<COLL> (bcast_chain_pipeline with the rules' seg=262144; not the hierarchical "
                   "broadcast), call + wait, the slowest rank's median; beside it cadc simulate of the same "
                   f"instance (u8 elements, or f64 sums for reductions) with --cpus {cpus} and alg_bench's alpha, "
                   "beta and alpha eager (a one-message ping-pong: a line through the sizes above 1984 B, the "
                   "mean of those up to it), switch (with more ranks than CPUs: the same ping-pong between two "
                   "ranks on one CPU, less that between two, up to 1984 B) and gamma (a sum loop) of the same "
                   "repetition"),
        "results": results,
    }
    # One figure per line, as the C programs write them (bench_out.h).
    head = json.dumps({k: v for k, v in out.items() if k != "results"}, indent=1)[:-2]
    lines = ",\n".join("  " + json.dumps(r, separators=(", ", ": ")) for r in results)
    args.json.write_text(f'{head},\n "results": [\n{lines}\n ]\n}}\n')
    print(f"sim_check: {args.json}: {len(results)} figures", file=sys.stderr)


if __name__ == "__main__":
    main()
