"""core_bench writes a report that follows its schema and reports every
figure the foundation promises.  The figures themselves are not judged
here: speed is a benchmark's business, never a test's."""

import json
import os
import subprocess
from pathlib import Path

import jsonschema

ROOT = Path(__file__).resolve().parents[2]
FIGURES = {
    "executor pop+complete per node": "<= 50",
    "verifier throughput": ">= 10",
    "builtin sum f64": ">= 0.9",
    "builtin max f64": ">= 0.9",
    "vm sum f64": ">= 0.5",
    "vm max f64": ">= 0.5",
}


def test_core_bench_report_follows_the_schema(build_dir, tmp_path):
    out = tmp_path / "core.json"
    env = dict(os.environ, BENCH_QUICK="1")
    run = subprocess.run([str(build_dir / "bin" / "core_bench"), "--json", str(out)],
                         env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    report = json.loads(out.read_text())
    schema = json.loads((ROOT / "schemas" / "bench-result.schema.json").read_text())
    jsonschema.validate(report, schema)

    by_name = {r["name"]: r for r in report["results"]}
    for name, target in FIGURES.items():
        assert name in by_name, f"{name} missing from the report"
        assert by_name[name]["target"] == target
    for r in report["results"]:
        assert r["min"] <= r["median"] <= r["max"], r
        assert len(r["repetitions"]) >= 3
        assert r["name"] in run.stdout  # the table shows what the JSON holds


def test_core_bench_rejects_unknown_arguments(build_dir):
    run = subprocess.run([str(build_dir / "bin" / "core_bench"), "--frobnicate"],
                         capture_output=True, text=True)
    assert run.returncode == 2
    assert "usage: core_bench" in run.stderr
