"""The benchmark programs write reports that follow their schema and hold
every figure the issues promise.  The figures themselves are not judged
here: speed is a benchmark's business, never a test's."""

import json
import os
import re
import subprocess
from pathlib import Path

import jsonschema
import pytest

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


def test_irq_bench_report_follows_the_schema(build_dir, tmp_path):
    """What an interrupt costs here, beside the copies it would progress
    (the figures behind CADRT_KICK_MIN)."""
    out = tmp_path / "interrupts.json"
    run = subprocess.run([str(build_dir / "bin" / "irq_bench"), "--json", str(out)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    report = json.loads(out.read_text())
    jsonschema.validate(report, json.loads((ROOT / "schemas" / "bench-result.schema.json").read_text()))
    names = {r["name"] for r in report["results"]}
    for name in ("signal a computing process: tgkill", "signal a computing process: until its handler runs",
                 "wake a thread beside a computing one: until it runs", "timer signal to itself: work lost per signal",
                 "memcpy 64KiB", "memcpy 1MiB"):
        assert name in names
    for r in report["results"]:
        assert r["min"] <= r["median"] <= r["max"] and len(r["repetitions"]) == 7, r


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


RT_TARGETS = {
    "latency ratio ibcast 1KiB": "<= 1.5",
    "latency ratio iallreduce 1KiB": "<= 1.5",
    "latency ratio ialltoall 1KiB": "<= 1.5",
    "latency ratio ibcast 256KiB": "<= 1.0",
    "latency ratio iallreduce 256KiB": "<= 1.0",
    "latency ratio ialltoall 256KiB": "<= 1.0",
    "overlap ibcast 1MiB cadrt": ">= 40",
}


def test_rt_bench_report_follows_the_schema(build_dir, tmp_path):
    """cadrt against Open MPI under mpirun (2 ranks, quick): the report
    holds the issue's figures with their targets, and Open MPI's overlap
    as the reference."""
    out = tmp_path / "rt.json"
    cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-n", "2",
           "-x", f"LD_PRELOAD={build_dir / 'lib' / 'libcadmpi.so'}", "-x", "BENCH_QUICK=2", "-x", "CADRT_ENGINE=signal",
           str(build_dir / "bin" / "rt_bench"), "--json", str(out)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("CADRT_")}
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads(out.read_text())
    schema = json.loads((ROOT / "schemas" / "bench-result.schema.json").read_text())
    jsonschema.validate(report, schema)
    assert report["engine"] == "signal"
    by_name = {r["name"]: r for r in report["results"]}
    for name, target in RT_TARGETS.items():
        assert by_name[name]["target"] == target, name
    assert "overlap ibcast 1MiB openmpi" in by_name
    for coll in ("ibcast", "ireduce", "iallreduce", "igather", "iscatter", "iallgather", "ialltoall",
                 "ireduce_scatter_block"):
        for of in ("cadrt", "openmpi", "openmpi-blocking", "cadrt-persistent", "openmpi-persistent",
                   "cadrt-blocking"):
            assert f"latency {coll} 8B {of}" in by_name, (coll, of)
        blk = by_name[f"latency ratio blocking {coll} 1MiB"]
        assert blk["params"]["of"] == "cadrt-blocking/openmpi-blocking" and blk["median"] > 0, blk
        pers = by_name[f"latency ratio persistent {coll} 8B"]
        assert pers["params"]["of"] == "cadrt-persistent/openmpi-persistent" and pers["median"] > 0, pers
        assert by_name[f"latency ratio persistent/nonblocking {coll} 8B"]["params"]["of"] == "cadrt-persistent/cadrt"
    assert "latency ratio ibarrier 0B" in by_name
    for coll in ("ibcast", "iallreduce", "ialltoall", "igather"):
        for of in ("cadrt", "openmpi"):
            assert by_name[f"overlap {coll} 64KiB {of} 8 tests"]["params"]["tests"] == 8
            assert by_name[f"overlap {coll} 64KiB {of}"]["params"]["tests"] == 0
        for of in ("cadrt", "openmpi"):  # the time beyond the computation, in us, unclamped
            beyond = by_name[f"beyond {coll} 64KiB {of}"]
            assert beyond["unit"] == "us" and beyond["params"]["tests"] == 0, beyond
        cap = by_name[f"overlap cap {coll} 64KiB"]  # the physical cap beside it
        assert cap["unit"] == "%" and cap["params"]["of"] == "cap" and cap["median"] <= 100, cap
    for r in report["results"]:
        assert r["min"] <= r["median"] <= r["max"], r
        assert r["name"] in run.stdout


def test_rt_bench_needs_libcadmpi(build_dir):
    cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-n", "1", str(build_dir / "bin" / "rt_bench")]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert run.returncode != 0
    assert "LD_PRELOAD=libcadmpi.so" in run.stderr


def validated(path):
    report = json.loads(path.read_text())
    jsonschema.validate(report, json.loads((ROOT / "schemas" / "bench-result.schema.json").read_text()))
    for r in report["results"]:
        assert r["min"] <= r["median"] <= r["max"], r
    return report, {r["name"]: r for r in report["results"]}


def test_rt_codelets_report_follows_the_schema(build_dir, tmp_path):
    """The overlap codelets (SMB availability, KACC CPU loss, matrix-vector
    overlap, PIOMan rendezvous), each for cadrt and for Open MPI."""
    out = tmp_path / "codelets.json"
    cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-n", "2",
           "-x", f"LD_PRELOAD={build_dir / 'lib' / 'libcadmpi.so'}", "-x", "BENCH_QUICK=2", "-x", "CADRT_ENGINE=thread",
           str(build_dir / "bin" / "rt_codelets"), "--json", str(out)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("CADRT_")}
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    report, by_name = validated(out)
    assert report["benchmark"] == "codelets" and report["engine"] == "thread"
    for of in ("cadrt", "openmpi"):
        for name in ("availability ibcast 64KiB", "availability ialltoall 1MiB", "cpu loss 12500 4x4",
                     "cpu loss 1250000 40x40", "matvec overlap ialltoall 1MiB", "rendezvous root time ibcast 1MiB",
                     "rendezvous root ratio ibcast 4MiB"):
            assert f"{name} {of}" in by_name, (name, of)
            assert by_name[f"{name} {of}"]["params"]["of"] == of
            assert f"{name} {of}" in run.stdout


def test_seg_bench_report_follows_the_schema(build_dir, tmp_path):
    """The pipelined broadcast against its segment size beside the LogGP
    model fitted from a ping-pong in the same run (3 ranks under cadrun)."""
    out = tmp_path / "segments.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CADRT_")}
    env["BENCH_QUICK"] = "1"
    run = subprocess.run([str(build_dir / "bin" / "cadrun"), "-n", "3", "--bind", "core",
                          str(build_dir / "bin" / "seg_bench"), "--json", str(out)],
                         capture_output=True, text=True, timeout=300, env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    report, by_name = validated(out)
    assert report["benchmark"] == "segments"
    for name in ("alpha", "beta", "model optimum 1MiB", "best measured 4MiB", "at model optimum / best 1MiB",
                 "bcast 1MiB seg 4KiB", "model 1MiB seg 4KiB", "bcast 4MiB seg 4MiB / best"):
        assert name in by_name, name
    assert by_name["bcast 1MiB seg 64KiB"]["params"]["seg"] == 65536
    assert by_name["bcast 1MiB seg 64KiB"]["params"]["ranks"] == 3


def test_sim_check_sets_cadc_simulate_beside_measurement(build_dir, tmp_path):
    """bench/sim_check.py: every standard algorithm but the hierarchical
    broadcast forced under cadrun (alg_bench), cadc simulate of the same
    instance with the costs measured in the same repetition."""
    out = tmp_path / "simulate.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CADRT_")}
    env["BENCH_QUICK"] = "1"
    run = subprocess.run(["/usr/bin/python3", str(ROOT / "bench" / "sim_check.py"), str(build_dir), "--json", str(out),
                          "--ranks", "2"], capture_output=True, text=True, timeout=300, env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    report, by_name = validated(out)
    assert report["benchmark"] == "simulate"
    for name in ("alpha P=2", "beta P=2", "gamma P=2", "alpha eager P=2", "measured bcast bcast_binomial 1MiB P=2",
                 "simulated allreduce allreduce_ring 64KiB P=2", "simulated/measured alltoall alltoall_bruck 8B P=2",
                 "measured bcast bcast_chain_pipeline:seg=262144 1KiB P=2", "pick/best allgather 1MiB P=2"):
        assert name in by_name, name
    assert not any("hier" in name for name in by_name)
    assert len(by_name["pick/best bcast 8B P=2"]["repetitions"]) == 3
    r = by_name["simulated/measured allreduce allreduce_ring 1MiB P=2"]
    sim, meas = by_name["simulated allreduce allreduce_ring 1MiB P=2"], by_name["measured allreduce allreduce_ring 1MiB P=2"]
    assert r["repetitions"] == pytest.approx([s / m for s, m in zip(sim["repetitions"], meas["repetitions"])])


def test_alg_bench_measures_a_turn_between_ranks_that_share_a_cpu(build_dir, tmp_path):
    """With more ranks than CPUs (3 on this machine's 2, or more ranks than
    any machine has), alg_bench also times the eager ping-pong between
    ranks 0 and C, which share CPU 0, and its "switch" is that one-way time
    less the one between ranks 0 and 1, averaged over the sizes up to
    1984 B (cadc simulate --switch); with a CPU per rank it is 0."""
    cpus = os.cpu_count() or 1
    env = {k: v for k, v in os.environ.items() if not k.startswith("CADRT_")}
    env["BENCH_QUICK"] = "1"
    out = tmp_path / "algorithms.json"

    def figures(ranks, sizes):
        run = subprocess.run([str(build_dir / "bin" / "cadrun"), "-n", str(ranks), "--bind", "core",
                              str(build_dir / "bin" / "alg_bench"), "--json", str(out), "--sizes", sizes,
                              "bcast=bcast_linear"], capture_output=True, text=True, timeout=300, env=env)
        assert run.returncode == 0, run.stdout + run.stderr
        return validated(out)[1]

    p = cpus + 1
    by_name = figures(p, "8,1024,65536")
    assert "pingpong one CPU 64KiB" not in by_name
    shared = [by_name[f"pingpong one CPU {s}"] for s in ("8B", "1KiB")]
    cross = [by_name[f"pingpong {s}"] for s in ("8B", "1KiB")]
    assert shared[0]["params"]["pair"] == [0, cpus]
    turn = by_name["switch"]
    assert turn["params"]["cpus"] == cpus and turn["params"]["ranks"] == p
    want = [sum(s["repetitions"][i] - c["repetitions"][i] for s, c in zip(shared, cross)) / 2
            for i in range(len(turn["repetitions"]))]
    assert turn["repetitions"] == pytest.approx(want, rel=1e-3, abs=1e-3)
    if cpus > 1:
        by_name = figures(2, "8,1024")
        assert by_name["switch"]["repetitions"] == [0] * 3 and "pingpong one CPU 8B" not in by_name


@pytest.mark.parametrize("args,message", [
    ([], "name at least one setting"),
    (["gather=gather_linear"], "COLL one of bcast, reduce, allreduce, allgather, alltoall"),
    (["bcast"], "a setting is COLL=NAME"),
    (["--sizes", "8,x", "bcast=bcast_linear"], "--sizes takes"),
    (["--sizes", "0", "bcast=bcast_linear"], "--sizes takes"),
    (["--sizes", "8", "bcast=bcast_linear"], "--sizes takes at least two byte counts"),
    (["--frobnicate"], "unknown option"),
])
def test_alg_bench_rejects_bad_arguments(build_dir, args, message):
    env = {k: v for k, v in os.environ.items() if not k.startswith("CADRT_")}
    run = subprocess.run([str(build_dir / "bin" / "cadrun"), "-n", "2", str(build_dir / "bin" / "alg_bench"), *args],
                         capture_output=True, text=True, timeout=60, env=env)
    assert run.returncode != 0 and message in run.stderr, run.stderr


def test_alg_bench_refuses_a_setting_the_collective_does_not_run(build_dir):
    env = {k: v for k, v in os.environ.items() if not k.startswith("CADRT_")}
    run = subprocess.run([str(build_dir / "bin" / "cadrun"), "-n", "2", str(build_dir / "bin" / "alg_bench"),
                          "bcast=allreduce_ring"], capture_output=True, text=True, timeout=60, env=env)
    assert run.returncode != 0 and "allreduce_ring" in run.stderr, run.stderr


KERNEL_TARGETS = {
    "kernel overlap ibcast 65536 of cap": ">= 90",
    "kernel overlap ialltoall 1048576 of cap": ">= 90",
    "kernel cpu loss 1250000 4x4": "<= 10",
    "kernel cpu loss 12500 40x40": "<= 10",
    "kernel/poll latency ibcast 8": "<= 2",
}


@pytest.fixture(scope="module")
def kernel_vm_run(build_dir, tmp_path_factory):
    """bench/kernel_vm.py's report (quick, 1 repetition) and its wakeup
    trace, in one qemu boot: (the run, the report's path)."""
    out = tmp_path_factory.mktemp("kernel-vm") / "kernel-vm.json"
    env = dict(os.environ, BENCH_QUICK="1")
    run = subprocess.run(["/usr/bin/python3", str(ROOT / "bench" / "kernel_vm.py"), str(build_dir), "--json", str(out),
                          "--reps", "1", "--wakeup"], capture_output=True, text=True, timeout=900, env=env)
    return run, out


def test_kernel_vm_report_follows_the_schema(kernel_vm_run):
    """Every engine, the kernel one on cad.ko, in one qemu boot (quick, 1
    repetition): the report holds the kernel-module issue's figures with
    their targets."""
    run, out = kernel_vm_run
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads(out.read_text())
    schema = json.loads((ROOT / "schemas" / "bench-result.schema.json").read_text())
    jsonschema.validate(report, schema)
    by_name = {r["name"]: r for r in report["results"]}
    for name, target in KERNEL_TARGETS.items():
        # (An "of cap" row is left out when no repetition had a positive
        # cap; its raw overlap is there all the same.)
        if name.endswith(" of cap") and name not in by_name:
            assert name.removesuffix(" of cap") in by_name, name
            continue
        assert by_name[name]["target"] == target, name
    for engine in ("poll", "thread", "signal"):
        assert f"{engine} overlap ibcast 1048576" in by_name
    # The persistent figures (no target): the share of the call's own work.
    for coll in ("ibcast", "ialltoall"):
        assert by_name[f"kernel overlap persistent {coll} 65536"]["params"]["persistent"] is True
        assert by_name[f"kernel overlap persistent {coll} 65536"].get("target") is None
    for r in report["results"]:
        # (An "of cap" leaves out, and counts, a repetition whose cap was
        # not positive, which emulation's noise can give.)
        assert r["min"] <= r["median"] <= r["max"], r
        assert len(r["repetitions"]) + r["params"].get("without_cap", 0) == 1, r
        assert r["name"] in run.stdout


def test_kernel_vm_wakeup_traces_the_work_items(kernel_vm_run):
    """--wakeup: cad.ko's work items, traced in the VM through a quick
    kbench run (after the report's, in its boot), each queueing paired
    with its start on the other vCPU."""
    run, _ = kernel_vm_run
    assert run.returncode == 0, run.stdout + run.stderr
    m = re.search(r"^work item queued -> started on the other vCPU: (\d+), median (\d+) us, "
                  r"10th-90th percentile (\d+)-(\d+) us, max (\d+) us$", run.stdout, re.M)
    assert m, run.stdout
    count, median, p10, p90, top = map(int, m.groups())
    assert count > 0 and p10 <= median <= p90 <= top, run.stdout
    assert re.search(r"^work item running \(copies included\): \d+, median", run.stdout, re.M), run.stdout


def test_kernel_vm_needs_json_or_wakeup(build_dir):
    run = subprocess.run(["/usr/bin/python3", str(ROOT / "bench" / "kernel_vm.py"), str(build_dir)],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 2 and "give --json FILE, --wakeup, or both" in run.stderr, run.stderr


def test_report_from_the_committed_results(tmp_path):
    """bench/report.py turns the results in bench/results into a report with
    every target, the summary tables and the plots; it writes nothing else
    (the README links to the report and holds no figures)."""
    out = tmp_path / "report.md"
    readme_before = (ROOT / "README.md").read_text()
    run = subprocess.run(["/usr/bin/python3", str(ROOT / "bench" / "report.py"), "--out", str(out)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert (ROOT / "README.md").read_text() == readme_before
    text = out.read_text()
    targets = 0
    for path in sorted((ROOT / "bench" / "results").glob("*.json")):
        for r in json.loads(path.read_text())["results"]:
            assert f"| {r['name']} |" in text, r["name"]
            targets += "target" in r
    assert text.count("**met**") + text.count("not met") >= 2 * targets  # the targets table and the listing
    for heading in ("## Targets", "## The runtime against Open MPI", "## The kernel engine against the others",
                    "## `cadc simulate` against measurement", "## Plots", "## Every figure"):
        assert heading in text, heading
    rt = text.split("## The runtime against Open MPI", 1)[1].split("\n## ", 1)[0]
    assert "| latency ratio ibcast 1MiB |" in rt and "(results/rt-" in rt
    assert "<!-- bench:" not in text
    pngs = sorted(p.name for p in (tmp_path / "report").glob("*.png"))
    for png in ("overlap-ibcast.png", "overlap-igather.png", "latency-ratio.png", "bandwidth.png", "vm-cpu-loss.png",
                "interpreter.png", "verifier.png"):
        assert png in pngs, (png, pngs)
    for p in pngs:
        assert (tmp_path / "report" / p).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_report_takes_no_readme(tmp_path):
    """--readme is gone: a call that still passes it fails instead of
    silently leaving a README's old figures."""
    run = subprocess.run(["/usr/bin/python3", str(ROOT / "bench" / "report.py"), "--out", str(tmp_path / "r.md"),
                          "--readme", str(tmp_path / "README.md")], capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and "--readme" in run.stderr, run.stderr


def test_report_rejects_a_malformed_result(tmp_path):
    (tmp_path / "bad.json").write_text(json.dumps({"benchmark": "x", "results": []}))
    run = subprocess.run(["/usr/bin/python3", str(ROOT / "bench" / "report.py"), "--results", str(tmp_path),
                          "--out", str(tmp_path / "r.md")], capture_output=True, text=True, timeout=120)
    assert run.returncode != 0
    assert "bad.json: not a benchmark result" in run.stderr


def test_an_overlap_target_above_its_physical_cap_is_marked():
    """An overlap that misses its target where the run's cap for that
    collective and size is below the target says so: no engine could meet
    it on that machine."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("report", ROOT / "bench" / "report.py")
    report = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(report)
    params = {"collective": "ialltoall", "bytes": 65536, "ranks": 2, "of": "cadrt", "tests": 0}
    doc = {"benchmark": "rt", "results": [
        {"name": "overlap cap ialltoall 64KiB", "median": 25.0, "params": dict(params, of="cap")},
        {"name": "overlap cap ibcast 64KiB", "median": 70.0,
         "params": dict(params, collective="ibcast", of="cap")}]}
    caps = report.caps_of(doc)
    low = {"name": "overlap ialltoall 64KiB cadrt", "median": 5.0, "target": ">= 40", "params": params}
    assert report.met(low, report.cap_for(caps, low)) == "not met (over the cap)"
    bcast = dict(low, name="overlap ibcast 64KiB cadrt", params=dict(params, collective="ibcast"))
    assert report.met(bcast, report.cap_for(caps, bcast)) == "not met"
    assert report.met(dict(low, median=41.0), 25.0) == "**met**"
    latency = {"name": "latency ratio ialltoall 64KiB", "median": 1.2, "target": "<= 1.0", "params": params}
    assert report.cap_for(caps, latency) is None and report.met(latency, None) == "not met"
