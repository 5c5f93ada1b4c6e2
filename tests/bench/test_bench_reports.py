"""The benchmark programs write reports that follow their schema and hold
every figure the issues promise.  The figures themselves are not judged
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


CADC_FIGURES = {
    "verify alltoall_rotated P=1024": "<= 10",
    "verify bcast_binomial P=65536": "<= 5",
    "instantiate one rank of alltoall_rotated P=4096": "<= 5",
}


def test_cadc_bench_report_follows_the_schema(build_dir, tmp_path):
    out = tmp_path / "cadc.json"
    run = subprocess.run([str(build_dir / "bin" / "cadc_bench"), "--json", str(out)],
                         env=dict(os.environ, BENCH_QUICK="1"), capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    report = json.loads(out.read_text())
    jsonschema.validate(report, json.loads((ROOT / "schemas" / "bench-result.schema.json").read_text()))
    by_name = {r["name"]: r for r in report["results"]}
    for name, target in CADC_FIGURES.items():
        assert by_name[name]["target"] == target
