"""cadc's subcommands end to end, as users run them."""

import json
import os
import random
import re
import shutil
import subprocess
from pathlib import Path

import jsonschema
import pytest

from content_hash import content_hash

ROOT = Path(__file__).resolve().parents[2]
ALGORITHMS = sorted((ROOT / "algorithms").glob("*.cad"))
CASES = sorted((ROOT / "tests" / "cli" / "cases").glob("*.cad"))


def cadc(build_dir, *args, cwd=None, check=None):
    run = subprocess.run([str(build_dir / "bin" / "cadc"), *map(str, args)], capture_output=True,
                         text=True, timeout=600, cwd=cwd)
    if check is not None:
        assert run.returncode == check, f"cadc {' '.join(map(str, args))}: exit {run.returncode}\n{run.stdout[-2000:]}\n{run.stderr[-2000:]}"
    return run


def schema(name):
    return json.loads((ROOT / "schemas" / name).read_text())


# ---- fmt ----

@pytest.mark.parametrize("path", ALGORITHMS, ids=[p.name for p in ALGORITHMS])
def test_standard_algorithms_are_canonical_and_round_trip(build_dir, path, tmp_path):
    cadc(build_dir, "fmt", "--check", path, check=0)
    as_json = cadc(build_dir, "fmt", "--to", "json", path, check=0).stdout
    (tmp_path / "a.json").write_text(as_json)
    jsonschema.validate(json.loads(as_json), schema("algorithm.schema.json"))
    back = cadc(build_dir, "fmt", "--to", "dsl", tmp_path / "a.json", check=0).stdout
    assert back == path.read_text()
    (tmp_path / "b.cad").write_text(back)
    assert cadc(build_dir, "fmt", "--to", "json", tmp_path / "b.cad", check=0).stdout == as_json


def test_fmt_rewrites_in_place_and_refuses_mixing_forms(build_dir, tmp_path):
    messy = tmp_path / "messy.cad"
    messy.write_text("algorithm  m:bcast {\n let   a = ((1+2))*3 # note\n\n\n  fence}\n")
    run = cadc(build_dir, "fmt", "--check", messy, check=1)
    assert "not in canonical form" in run.stderr
    cadc(build_dir, "fmt", "-i", messy, check=0)
    assert messy.read_text() == "algorithm m : bcast\n{\n  let a = (1 + 2) * 3  # note\n\n  fence\n}\n"
    cadc(build_dir, "fmt", "--check", messy, check=0)
    run = cadc(build_dir, "fmt", "-i", "--to", "json", messy, check=2)
    assert "-i keeps a file's form" in run.stderr


def test_fmt_keeps_comments_everywhere(build_dir, tmp_path):
    text = ("# header\n#\n# more header\n\n# about t\nalgorithm t : bcast\n"
            "  # the segment\n  param seg = 4  # elements\n  requires P >= 1  # any\n"
            "{\n  # first\n  for k in 0 .. 2 {\n    fence  # inner\n    # before the brace\n  }  # after\n"
            "  if rank == 0 {\n    fence\n  } else if rank == 1 {\n    fence\n  } else {\n    # nothing\n  }\n"
            "  # at the end\n}\n")
    src = tmp_path / "c.cad"
    src.write_text(text)
    assert cadc(build_dir, "fmt", src, check=0).stdout == text
    (tmp_path / "c.json").write_text(cadc(build_dir, "fmt", "--to", "json", src, check=0).stdout)
    assert cadc(build_dir, "fmt", "--to", "dsl", tmp_path / "c.json", check=0).stdout == text


# ---- compile, disasm, dot ----

def test_compile_writes_a_verified_program_per_rank(build_dir, tmp_path):
    run = cadc(build_dir, "compile", ROOT / "algorithms" / "bcast_binomial.cad", "--ranks", 5,
               "--size", 9, "--root", 2, "-o", tmp_path, check=0)
    assert "wrote 5 programs" in run.stdout
    files = sorted(tmp_path.glob("*.cadbc"))
    assert [f.name for f in files] == [f"bcast_binomial.{r}.cadbc" for r in range(5)]
    for f in files:
        text = cadc(build_dir, "disasm", f, check=0).stdout
        assert text.startswith('; cad v1 "bcast_binomial" bcast, rank')
        assert "bcast_binomial.cad:" in text  # line info names the source


def test_disasm_survives_any_bytes(build_dir, tmp_path):
    cadc(build_dir, "compile", ROOT / "algorithms" / "allreduce_recursive_doubling.cad", "--ranks", 3,
         "--size", 5, "-o", tmp_path, check=0)
    good = (tmp_path / "allreduce_recursive_doubling.1.cadbc").read_bytes()
    rng = random.Random(7)
    samples = [good[:cut] for cut in range(0, len(good), 7)]
    samples += [bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 600))) for _ in range(60)]
    for _ in range(60):
        b = bytearray(good)
        b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
        samples.append(bytes(b))
    bad = tmp_path / "x.cadbc"
    for blob in samples:
        bad.write_bytes(blob)
        run = cadc(build_dir, "disasm", bad)
        assert run.returncode in (0, 1), (run.returncode, blob[:32])
        if run.returncode == 1:
            assert "rejected by the verifier" in run.stderr


def test_dot_draws_every_rank_and_every_message(build_dir):
    alg = ROOT / "algorithms" / "allgather_ring.cad"
    dot = cadc(build_dir, "dot", alg, "--ranks", 4, "--size", 3, check=0).stdout
    assert dot.startswith('digraph "allgather_ring"')
    assert dot.count("subgraph cluster_") == 4
    # A ring allgather: each of the P ranks sends P - 1 blocks, one message each.
    assert dot.count("style=dashed") == 4 * 3
    # Each operation's label names the source line it comes from, as disasm does.
    labels = re.findall(r'\[label="([^"]*)"\]', dot)
    assert labels and all(re.search(r"\\nallgather_ring\.cad:\d+:\d+$", l) for l in labels), labels
    verified = json.loads(cadc(build_dir, "verify", "--json", alg, "--ranks", 4, "--sizes", 3,
                               check=0).stdout)
    assert verified["results"][0]["instances"][0]["messages"] == 4 * 3


# ---- simulate ----

def test_simulate_prices_an_instance(build_dir):
    alg = ROOT / "algorithms" / "bcast_linear.cad"
    out = cadc(build_dir, "simulate", alg, "--ranks", 2, "--size", 1000, "--alpha", 1000, "--beta", 1, check=0).stdout
    # One message: its handshake, then 4000 bytes (i32) at 1 ns each.
    assert out.startswith("bcast_linear P=2 n=1000 root=0: 5 us\n"), out
    assert "alpha 1000 ns per message, beta 1 ns/B copied" in out
    assert "critical path: 1 operation, 1 message: 4 us copying, 0 ns reducing, 1 us in handshakes" in out
    doc = json.loads(cadc(build_dir, "simulate", alg, "--ranks", 4, "--size", 1000, "--alpha", 1000, "--beta", 1,
                          "--json", "--timeline", check=0).stdout)
    assert doc["time_ns"] == 5000 and doc["instance"] == "P=4 n=1000 root=0"
    assert [r["busy_ns"] for r in doc["ranks"]] == [0, 5000, 5000, 5000]  # every receiver reads at once
    assert len(doc["timeline"]) == 6 and doc["critical_path"][0]["at"].endswith("bcast_linear.cad:14:7")
    assert doc["diagnostics"] == []
    # The timeline: each receiver's own CPU copies (by receiver).
    tl = cadc(build_dir, "simulate", alg, "--ranks", 4, "--size", 1000, "--alpha", 1000, "--beta", 1, "--timeline",
              check=0).stdout
    assert "cpu 2  send buf[0:1000] → 2" in tl


def test_simulate_on_cpus_the_ranks_share(build_dir):
    alg = ROOT / "algorithms" / "bcast_linear.cad"
    args = ["simulate", alg, "--ranks", 4, "--size", 1000, "--alpha", 1000, "--beta", 1]
    # Ranks 1 and 3 share CPU 1 (r mod 2): rank 3's copy waits for rank 1's
    # (a turn between them free here; its default is 6 us).
    out = cadc(build_dir, *args, "--cpus", 2, "--switch", 0, "--timeline", check=0).stdout
    assert out.startswith("bcast_linear P=4 n=1000 root=0: 10 us\n"), out
    assert "model: 2 CPUs shared, rank r on r mod 2;" in out
    assert "5 us       10 us      rank 0    cpu 1 (rank 3)  send buf[0:1000] → 3" in out, out
    default = cadc(build_dir, *args, "--cpus", 2, check=0).stdout
    assert default.startswith("bcast_linear P=4 n=1000 root=0: 16 us\n"), default
    assert "a CPU's turn from one rank to another: 6000 ns (1 turn)" in default, default
    doc = json.loads(cadc(build_dir, *args, "--cpus", 2, "--switch", 0, "--json", check=0).stdout)
    assert doc["model"]["cpus"] == 2 and [r["busy_ns"] for r in doc["ranks"]] == [0, 5000, 5000, 5000]
    assert [(o["cpu"], o["by_rank"]) for o in doc["critical_path"]] == [(1, 1), (1, 3)]
    # 0 or more CPUs than ranks: one per rank.
    for cpus in (0, 4, 99):
        assert json.loads(cadc(build_dir, *args, "--cpus", cpus, "--json", check=0).stdout)["time_ns"] == 5000
    for bad in ("-1", "two", "1.5", str(1 << 30)):
        run = cadc(build_dir, *args, "--cpus", bad, check=2)
        assert "--cpus" in run.stderr and run.stdout == "", bad
    # A CPU's turn from rank 1's work to rank 3's costs --switch, on the
    # critical path; with a CPU per rank there is none.
    out = cadc(build_dir, *args, "--cpus", 2, "--switch", 700, check=0).stdout
    assert out.startswith("bcast_linear P=4 n=1000 root=0: 10.7 us\n"), out
    assert "a CPU's turn from one rank to another: 700 ns (1 turn)" in out, out
    assert "700 ns in turns between ranks" in out, out
    doc = json.loads(cadc(build_dir, *args, "--cpus", 2, "--switch", 700, "--json", check=0).stdout)
    assert doc["switches"] == 1 and doc["model"]["switch_ns"] == 700, doc
    assert [o["switch_ns"] for o in doc["critical_path"]] == [0, 700]
    doc = json.loads(cadc(build_dir, *args, "--switch", 700, "--json", check=0).stdout)
    assert doc["switches"] == 0 and doc["time_ns"] == 5000
    for bad in ("-1", "nan", "fast"):
        run = cadc(build_dir, *args, "--cpus", 2, "--switch", bad, check=2)
        assert "--switch" in run.stderr and run.stdout == "", bad


def test_simulate_prices_eager_messages_on_each_side(build_dir):
    alg = ROOT / "algorithms" / "bcast_linear.cad"
    args = ["simulate", alg, "--ranks", 3, "--size", 100, "--alpha", 1000, "--beta", 1, "--alpha-eager", 200]
    # 400 bytes, eager below 1984: the root puts both in the ring (100 +
    # 400 ns each), each receiver takes its own out (the same).
    out = cadc(build_dir, *args, "--timeline", check=0).stdout
    assert out.startswith("bcast_linear P=3 n=100 root=0: 1.5 us\n"), out
    assert "eager up to 1984 B: alpha 200 ns per message, half on each side" in out
    assert "1 us       1.5 us     rank 2    cpu 2  recv buf[0:100] ← 0" in out, out
    doc = json.loads(cadc(build_dir, *args, "--json", check=0).stdout)
    assert doc["model"]["alpha_eager_ns"] == 200 and doc["model"]["eager_bytes"] == 1984
    assert [r["busy_ns"] for r in doc["ranks"]] == [1000, 500, 500]
    # --eager-bytes 0 (or below the message): a rendezvous.
    for eager in (0, 399):
        doc = json.loads(cadc(build_dir, *args, "--eager-bytes", eager, "--json", check=0).stdout)
        assert doc["time_ns"] == 1400 and doc["ranks"][0]["busy_ns"] == 0, eager
    assert "no eager messages" in cadc(build_dir, *args, "--eager-bytes", 0, check=0).stdout
    for bad in (["--alpha-eager", "-5"], ["--alpha-eager", "nan"], ["--eager-bytes", "-1"],
                ["--eager-bytes", "lots"], ["--eager-bytes", str(1 << 41)]):
        run = cadc(build_dir, *args, *bad, check=2)
        assert bad[0] in run.stderr and run.stdout == "", bad


def test_simulate_shows_the_pipeline_and_its_segment_size(build_dir):
    alg = ROOT / "algorithms" / "bcast_chain_pipeline.cad"
    times = {}
    for seg in (1000, 10000, 100000):
        doc = json.loads(cadc(build_dir, "simulate", alg, "--ranks", 4, "--size", 100000, "--param", f"seg={seg}",
                              "--json", check=0).stdout)
        times[seg] = doc["time_ns"]
    # alpha 4.9 us, beta 0.18 ns/B (the defaults): (P - 2 + segments)
    # (alpha + beta seg); 400 kB in one piece crosses 3 links one after
    # another, in 100 pieces alpha adds up.
    for seg, t in times.items():
        assert t == pytest.approx((2 + 100000 // seg) * (4900 + 0.18 * 4 * seg)), times
    assert times[10000] < times[100000] and times[10000] < times[1000], times


def test_simulate_shows_the_ranks_that_end_last_of_many(build_dir):
    args = ["simulate", ROOT / "algorithms" / "bcast_binomial.cad", "--ranks", 1000, "--size", 1]
    out = cadc(build_dir, *args, check=0).stdout
    assert "(the 8 of 1000 ranks that end last)" in out
    rows = [int(line.split()[0]) for line in out.splitlines() if line.startswith("   ") and line.split()[0].isdigit()]
    ranks = json.loads(cadc(build_dir, *args, "--json", check=0).stdout)["ranks"]
    last = sorted(sorted(ranks, key=lambda r: -r["done_ns"])[:8], key=lambda r: r["rank"])
    assert rows == [r["rank"] for r in last] and len(ranks) == 1000, out


def test_simulate_runs_every_standard_algorithm(build_dir):
    for alg in ALGORITHMS:
        extra = ["--topology", ROOT / "algorithms" / "topologies" / "two-socket.json"] if "hier" in alg.name else []
        doc = json.loads(cadc(build_dir, "simulate", alg, "--ranks", 5, "--size", 1000, "--json", *extra,
                              check=0).stdout)
        assert doc["time_ns"] > 0 and len(doc["ranks"]) == 5, alg


def test_simulate_only_what_verifies(build_dir, tmp_path):
    cases = ROOT / "tests" / "cli" / "cases"
    run = cadc(build_dir, "simulate", cases / "e034_deadlock.cad", "--ranks", 2, "--size", 3, check=1)
    assert "[CAD-E034]" in run.stderr and run.stdout == ""
    run = cadc(build_dir, "simulate", ROOT / "algorithms" / "allreduce_ring.cad", "--ranks", 3, "--size", 9,
               "--noncommutative", check=1)
    assert "this requirement does not hold for the instance [CAD-E009]" in run.stderr
    alg = ROOT / "algorithms" / "bcast_linear.cad"
    for bad in (["--alpha", "-1"], ["--beta", "fast"], ["--ranks", "0"], ["--gamma", "1e13"], ["--alpha", "nan"],
                ["--beta", "inf"], ["--gamma", "1e"]):
        run = cadc(build_dir, "simulate", alg, "--size", 4, *(["--ranks", 2] if bad[0] != "--ranks" else []), *bad,
                   check=2)
        assert run.stderr and run.stdout == "", bad


# ---- verify ----

def test_verify_json_reports_each_instance(build_dir):
    out = json.loads(cadc(build_dir, "verify", "--json", ROOT / "algorithms" / "reduce_binomial.cad",
                          "--ranks", "1..4", "--sizes", "0,5", "--roots", 0, check=0).stdout)
    res = out["results"][0]
    assert res["algorithm"] == "reduce_binomial" and res["failed"] == 0
    assert res["verified"] == len(res["instances"]) == 4 * 2 * 2  # and in place
    inst = res["instances"][-1]
    assert inst["instance"] == "P=4 n=5 root=0 inplace noncommutative"
    for key in ("messages", "bytes", "critical_path", "scratch", "operations"):
        assert isinstance(inst[key], int)


def test_verify_counts_skipped_instances(build_dir, tmp_path):
    f = tmp_path / "pairs.cad"
    f.write_text("algorithm pairs : allgather\n  requires P <= 2\n{\n"
                 "  copy recvbuf[rank * n : rank * n + n] from sendbuf\n"
                 "  if P == 2 {\n    let q = 1 - rank\n"
                 "    send sendbuf to q\n    recv recvbuf[q * n : q * n + n] from q\n  }\n}\n")
    run = cadc(build_dir, "verify", f, "--ranks", "1..6", "--sizes", 3, check=0)
    assert "pairs: 2 instances verified, 4 skipped, 0 failed" in run.stdout
    assert "skipped 4: " in run.stdout
    out = json.loads(cadc(build_dir, "verify", "--json", f, "--ranks", "1..6", "--sizes", 3, check=0).stdout)
    results = [i["result"] for i in out["results"][0]["instances"]]
    assert results == ["verified"] * 2 + ["skipped"] * 4
    # Every instance skipped is an error.
    run = cadc(build_dir, "verify", f, "--ranks", "3..5", "--sizes", 3, check=1)
    assert "CAD-E038" in run.stderr


def test_verify_stops_after_max_failures(build_dir):
    broken = ROOT / "demo" / "bcast_forgets_last.cad"
    run = cadc(build_dir, "verify", broken, "--max-failures", 1, "-j", 1, check=1)
    assert "18 instances verified, 0 skipped, 1 failed, 67 not run (--max-failures 1)" in run.stdout
    assert run.stderr.count("[CAD-E036]") == 1
    run = cadc(build_dir, "verify", broken, "-j", 1, check=1)
    assert "29 instances verified, 0 skipped, 10 failed, 47 not run (--max-failures 10)" in run.stdout
    assert cadc(build_dir, "verify", broken, "--max-failures", 0).returncode == 2


def test_usage_errors_exit_2(build_dir):
    assert cadc(build_dir, "frobnicate").returncode == 2
    assert cadc(build_dir, "verify", ALGORITHMS[0], "--ranks", "3..1").returncode == 2
    assert cadc(build_dir, "verify", ALGORITHMS[0], "--ranks", "x").returncode == 2
    run = cadc(build_dir, "compile", ALGORITHMS[0], "--ranks", 2, "--size", 1, "--root", 5, "-o", "/tmp/cadx")
    assert run.returncode == 2 and "--root 5 is not below --ranks 2" in run.stderr
    run = cadc(build_dir, "verify", ALGORITHMS[0], "--ranks", 2, "--dtype", "f64", "--op", "band")
    assert run.returncode == 2 and "does not apply" in run.stderr
    # Limits on what a sweep or an instance may ask for (instance.h, sweep.h).
    run = cadc(build_dir, "verify", ALGORITHMS[0], "--ranks", 2000000)
    assert run.returncode == 2 and "P must be 1..1048576, not 2000000" in run.stderr
    run = cadc(build_dir, "compile", ALGORITHMS[0], "--ranks", 2000000, "-o", "/tmp/cadx")
    assert run.returncode == 2 and "--ranks must be 1..1048576" in run.stderr
    run = cadc(build_dir, "verify", ALGORITHMS[0], "--ranks", "1..1000", "--sizes", "0..9999", "--roots", 0)
    assert run.returncode == 2 and "the sweep has more than 4194304 instances" in run.stderr


# ---- topo ----

def test_topo_describes_this_machine(build_dir, tmp_path):
    out = tmp_path / "here.json"
    cadc(build_dir, "topo", "-o", out, check=0)
    doc = json.loads(out.read_text())
    jsonschema.validate(doc, schema("topology.schema.json"))
    cadc(build_dir, "verify", ROOT / "algorithms" / "bcast_hier_pipeline.cad", "--ranks", "1..6",
         "--sizes", 5, "--topology", out, check=0)
    places = json.loads(cadc(build_dir, "topo", "--places", check=0).stdout)
    assert len(places["places"]) == os.cpu_count()


# ---- build and the standard library ----

def test_standard_library_is_built_verified_and_hashed(build_dir):
    lib = build_dir / "lib" / "cad-std.cadlib"
    assert lib.exists(), "make build packs the standard library"
    doc = json.loads(lib.read_text())
    jsonschema.validate(doc, schema("cadlib.schema.json"))
    jsonschema.validate(doc["rules"], schema("rules.schema.json"))
    names = {a["name"] for a in doc["algorithms"]}
    assert names == {p.stem for p in ALGORITHMS}
    assert all(a["verified"] > 0 for a in doc["algorithms"])
    assert doc["hash"] == content_hash(doc)


def _library_dir(tmp_path, algorithms, rules):
    d = tmp_path / "lib"
    d.mkdir()
    for name in algorithms:
        shutil.copy(ROOT / "algorithms" / name, d / name)
    if rules is not None:
        (d / "rules.json").write_text(json.dumps(rules))
    return d


def test_build_refuses_what_does_not_verify(build_dir, tmp_path):
    d = _library_dir(tmp_path, ["bcast_linear.cad"], {"rules": [{"collective": "bcast", "use": "bcast_linear"}]})
    (d / "broken.cad").write_text((ROOT / "tests" / "cli" / "cases" / "e036_wrong_result.cad").read_text()
                                  .replace("algorithm bcast_skips_one : bcast", "algorithm bcast_skips_one : bcast\n  sweep ranks 3 sizes 2 roots 0"))
    out = tmp_path / "x.cadlib"
    run = cadc(build_dir, "build", d, "-o", out, check=1)
    assert "CAD-E036" in run.stderr and not out.exists()


def test_build_refuses_bad_rules_and_missing_sweeps(build_dir, tmp_path):
    out = tmp_path / "x.cadlib"
    d = _library_dir(tmp_path, ["bcast_linear.cad"], {"rules": [{"collective": "bcast", "max_bytes": 9, "use": "bcast_linear"}]})
    run = cadc(build_dir, "build", d, "-o", out, check=1)
    assert "CAD-E040" in run.stderr and "must have no conditions" in run.stderr
    (d / "rules.json").write_text(json.dumps({"rules": [{"collective": "bcast", "use": "bcast_nonesuch"}]}))
    assert "no algorithm named 'bcast_nonesuch'" in cadc(build_dir, "build", d, "-o", out, check=1).stderr
    (d / "rules.json").unlink()
    assert "rules.json: missing" in cadc(build_dir, "build", d, "-o", out, check=1).stderr
    (d / "rules.json").write_text(json.dumps({"rules": [{"collective": "bcast", "use": "bcast_linear"}]}))
    (d / "nosweep.cad").write_text("algorithm unswept : bcast\n{\n}\n")
    run = cadc(build_dir, "build", d, "-o", out, check=1)
    assert "declares no sweep" in run.stderr and not out.exists()


def test_build_refuses_rules_that_leave_calls_without_an_algorithm(build_dir, tmp_path):
    out = tmp_path / "x.cadlib"
    # The ring requires a commutative op: a non-commutative call finds nothing.
    d = _library_dir(tmp_path, ["reduce_scatter_block_ring.cad"],
                     {"rules": [{"collective": "reduce_scatter_block", "use": "reduce_scatter_block_ring"}]})
    run = cadc(build_dir, "build", d, "-o", out, check=1)
    assert ("rules.json: no rule gives an algorithm to reduce_scatter_block P=1 n=0 noncommutative "
            "(the runtime would fail such a call with -ENOTSUP) [CAD-E040]") in run.stderr and not out.exists()
    # With the rank-order algorithm after it, every call has one.
    shutil.copy(ROOT / "algorithms" / "reduce_scatter_block_linear.cad", d)
    (d / "rules.json").write_text(json.dumps({"rules": [
        {"collective": "reduce_scatter_block", "use": "reduce_scatter_block_ring"},
        {"collective": "reduce_scatter_block", "use": "reduce_scatter_block_linear"}]}))
    cadc(build_dir, "build", d, "-o", out)
    assert out.exists()
    # A gap just past a rule's byte bound: the catch-all requires 11 bytes.
    out.unlink()
    shutil.rmtree(d)
    d = _library_dir(tmp_path, ["bcast_linear.cad"], {"rules": [
        {"collective": "bcast", "max_bytes": 9, "use": "bcast_linear"},
        {"collective": "bcast", "use": "bcast_big"}]})
    (d / "bcast_big.cad").write_text((d / "bcast_linear.cad").read_text().replace(
        "algorithm bcast_linear : bcast\n  sweep ranks 1..33 sizes 0, 1, 7, 100 roots all",
        "algorithm bcast_big : bcast\n  requires n * esize >= 11\n  sweep ranks 1..3 sizes 11, 20 roots all"))
    run = cadc(build_dir, "build", d, "-o", out, check=1)
    assert "no rule gives an algorithm to bcast P=1 n=10 root=0 (the runtime" in run.stderr and not out.exists()


def test_build_checks_rules_by_in_place(build_dir, tmp_path):
    out = tmp_path / "x.cadlib"
    # Bruck made to refuse in-place calls: alone, they find nothing.
    d = _library_dir(tmp_path, ["alltoall_bruck.cad"], {"rules": [{"collective": "alltoall", "use": "bruck_apart"}]})
    (d / "bruck_apart.cad").write_text((d / "alltoall_bruck.cad").read_text().replace(
        "algorithm alltoall_bruck : alltoall", "algorithm bruck_apart : alltoall").replace(
        "  inplace\n", "  inplace\n  requires !inplace\n"))
    run = cadc(build_dir, "build", d, "-o", out, check=1)
    assert "no rule gives an algorithm to alltoall P=1 n=0 inplace (the runtime" in run.stderr and not out.exists()
    # A rule for in-place calls first fills the gap.
    (d / "rules.json").write_text(json.dumps({"rules": [
        {"collective": "alltoall", "inplace": True, "use": "alltoall_bruck"},
        {"collective": "alltoall", "use": "bruck_apart"}]}))
    cadc(build_dir, "build", d, "-o", out, check=0)
    assert json.loads(out.read_text())["rules"]["rules"][0]["inplace"] is True
    # Not for a rooted collective: its ranks would select apart.
    shutil.copy(ROOT / "algorithms" / "gather_linear.cad", d)
    (d / "rules.json").write_text(json.dumps({"rules": [
        {"collective": "alltoall", "use": "alltoall_bruck"},
        {"collective": "gather", "inplace": False, "use": "gather_linear"},
        {"collective": "gather", "use": "gather_linear"}]}))
    run = cadc(build_dir, "build", d, "-o", out, check=1)
    assert ("rules.json:/rules/1/inplace: only the root of a gather passes in place, and every rank must select "
            "the same algorithm") in run.stderr and "CAD-E040" in run.stderr


# ---- select ----

def test_select_gives_the_rules_choice_for_a_grid_of_calls(build_dir):
    lib = build_dir / "lib" / "cad-std.cadlib"
    run = cadc(build_dir, "select", lib, "bcast", "--ranks", "2,4", "--sizes", "1,4096,100000", "--dtype", "u8",
               check=0)
    assert run.stdout.splitlines() == [
        "bcast P=2 n=1 root=0 (1 B): bcast_linear",
        "bcast P=2 n=4096 root=0 (4096 B): bcast_linear",
        "bcast P=2 n=100000 root=0 (100000 B): bcast_linear",
        "bcast P=4 n=1 root=0 (1 B): bcast_binomial",
        "bcast P=4 n=4096 root=0 (4096 B): bcast_binomial",
        "bcast P=4 n=100000 root=0 (100000 B): bcast_scatter_allgather"]
    # The rule's parameters, and why the rules before it passed the call on.
    run = cadc(build_dir, "select", lib, "bcast", "--ranks", "4", "--sizes", "1000000", "--dtype", "u8",
               "--explain", check=0)
    assert run.stdout.splitlines() == [
        "bcast P=4 n=1000000 root=0 (1000000 B): bcast_chain_pipeline seg=262144",
        "  /rules/0 bcast_linear: P=4 is not in ranks 1..3",
        "  /rules/1 bcast_binomial: 1000000 B is above max_bytes 8192",
        "  /rules/2 bcast_scatter_allgather: 1000000 B is above max_bytes 262144",
        "  /rules/3 bcast_chain_pipeline: chosen"]
    # An algorithm's requirement passes a call on too: the ring allreduce
    # and Rabenseifner's need a commutative op.
    run = cadc(build_dir, "select", lib, "allreduce", "--ranks", "4", "--sizes", "100000", "--dtype", "f64",
               "--op", "sum", "--noncommutative", "--explain", check=0)
    assert run.stdout.splitlines()[0] == ("allreduce P=4 n=100000 sum noncommutative (800000 B): "
                                          "allreduce_recursive_doubling")
    assert "  /rules/7 allreduce_recursive_doubling: chosen" in run.stdout.splitlines()
    # And the machine: allreduce_linear is for ranks of one node.
    run = cadc(build_dir, "select", lib, "allreduce", "--ranks", "2", "--sizes", "10000", "--dtype", "f64",
               "--explain", check=0)
    assert run.stdout.splitlines()[0].endswith(": allreduce_linear")
    run = cadc(build_dir, "select", lib, "allreduce", "--ranks", "2", "--sizes", "10000", "--dtype", "f64",
               "--explain", "--topology", ROOT / "algorithms" / "topologies" / "two-node-cyclic.json", check=0)
    assert run.stdout.splitlines()[0].endswith(": allreduce_rabenseifner")
    assert "  /rules/6 allreduce_linear: its requirement ndomains(node) == 1 does not hold" in run.stdout
    run = cadc(build_dir, "select", lib, "alltoall", "--ranks", "3", "--sizes", "0", "--inplace", "--json", check=0)
    doc = json.loads(run.stdout)
    assert doc["calls"] == [{"collective": "alltoall", "P": 3, "n": 0, "bytes": 0, "inplace": True,
                             "algorithm": "alltoall_rotated", "params": {}}]


def test_select_example_in_the_docs_is_what_it_prints(build_dir):
    text = (ROOT / "docs" / "cadc.md").read_text()
    block = text[text.index("$ cadc select build/lib/cad-std.cadlib"):]
    block = block[:block.index("```")].splitlines()
    args = block[0].split()[2:]  # (after "$ cadc")
    assert args[:2] == ["select", "build/lib/cad-std.cadlib"]
    run = cadc(build_dir, "select", build_dir / "lib" / "cad-std.cadlib", *args[2:], cwd=ROOT, check=0)
    assert run.stdout.splitlines() == block[1:], run.stdout


def test_select_takes_the_librarys_operators(build_dir):
    lib = build_dir / "lib" / "cad-std.cadlib"
    run = cadc(build_dir, "select", lib, "allreduce", "--ranks", "4", "--sizes", "100", "--op", "complex_mul", check=0)
    assert run.stdout == "allreduce P=4 n=100 complex_mul noncommutative (1600 B): allreduce_recursive_doubling\n"
    run = cadc(build_dir, "select", lib, "allreduce", "--op", "complex_mul", "--dtype", "f64", check=2)
    assert "--dtype does not apply to complex_mul: its element type is struct cplx" in run.stderr


def test_select_takes_a_folder_before_it_is_built(build_dir, tmp_path):
    """The folder cadc build takes, checked but not proven: the same table
    as the library built from it, and a rules file's errors as build gives
    them."""
    lib = build_dir / "lib" / "cad-std.cadlib"
    for coll, extra in (("bcast", ["--dtype", "u8", "--sizes", "1,10000,300000"]),
                        ("allreduce", ["--dtype", "f64", "--noncommutative", "--explain"]),
                        ("allreduce", ["--op", "complex_mul"]), ("alltoall", ["--inplace", "--explain"])):
        built = cadc(build_dir, "select", lib, coll, *extra, check=0).stdout
        assert cadc(build_dir, "select", ROOT / "algorithms", coll, *extra, check=0).stdout == built
    d = _library_dir(tmp_path, ["bcast_linear.cad"], {"rules": [{"collective": "bcast", "max_bytes": 9, "use": "bcast_linear"}]})
    run = cadc(build_dir, "select", d, "bcast", check=1)
    assert "must have no conditions" in run.stderr and "CAD-E040" in run.stderr
    (d / "rules.json").unlink()
    assert "rules.json: missing" in cadc(build_dir, "select", d, "bcast", check=1).stderr


def test_select_refuses_bad_requests(build_dir, tmp_path):
    lib = build_dir / "lib" / "cad-std.cadlib"
    for args, msg in ((["bcats"], "'bcats' is not a collective"),
                      (["bcast", "--inplace"], "bcast has no in-place form in MPI"),
                      (["bcast", "--op", "max"], "bcast has no op"),
                      (["allreduce", "--op", "frobnicate"], "unknown --op 'frobnicate'"),
                      (["allreduce", "--dtype", "f99"], "unknown --dtype 'f99'"),
                      (["bcast", "--ranks", "0"], "--ranks must be 1.."),
                      (["bcast", "--ranks", "3..1"], "--ranks: "),
                      (["bcast", "--ranks", "1..1000", "--sizes", "1..1000"], "at most 100000 calls"),
                      (["bcast", "--ranks", "2", "--roots", "5"], "no call: every root of --roots is beyond"),
                      (["bcast", "--sizes", "-1"], "--sizes: '-1'")):
        run = cadc(build_dir, "select", lib, *args, check=2)
        assert msg in run.stderr, (args, run.stderr)
    # A library that is not one: its error, exit 1.
    bad = tmp_path / "bad.cadlib"
    bad.write_text("{}")
    run = cadc(build_dir, "select", bad, "bcast", check=1)
    assert "not a valid library" in run.stderr
    # A call no rule takes: said, exit 1.
    doc = json.loads((build_dir / "lib" / "cad-std.cadlib").read_text())
    # (cadc build refuses such rules; a library written by hand has them.)
    doc["rules"] = {"rules": [{"collective": "reduce_scatter_block", "use": "reduce_scatter_block_ring"},
                              {"collective": "bcast", "use": "bcast_linear"}, {"collective": "reduce", "use": "reduce_binomial"},
                              {"collective": "allreduce", "use": "allreduce_recursive_doubling"},
                              {"collective": "gather", "use": "gather_linear"}, {"collective": "scatter", "use": "scatter_linear"},
                              {"collective": "allgather", "use": "allgather_ring"}, {"collective": "alltoall", "use": "alltoall_bruck"},
                              {"collective": "barrier", "use": "barrier_dissemination"}]}
    doc["hash"] = content_hash(doc)
    hand = tmp_path / "hand.cadlib"
    hand.write_text(json.dumps(doc))
    run = cadc(build_dir, "select", hand, "reduce_scatter_block", "--ranks", "2", "--sizes", "1", "--noncommutative",
               "--explain", check=1)
    assert run.stdout.splitlines() == [
        "reduce_scatter_block P=2 n=1 sum noncommutative (4 B): none (the runtime fails such a call with -ENOTSUP)",
        "  /rules/0 reduce_scatter_block_ring: its requirement commutative does not hold"]


# ---- hostile input: clear errors, no crash, no hang ----

def test_source_files_must_be_utf8(build_dir, tmp_path):
    f = tmp_path / "latin1.cad"
    f.write_bytes(b"# caf\xe9\nalgorithm a : bcast\n{\n}\n")
    for args in (("check", f), ("fmt", "--to", "json", f)):
        run = cadc(build_dir, *args, check=1)
        assert "latin1.cad:1:6: error: invalid UTF-8 (byte 0xe9)" in run.stderr and "[CAD-E002]" in run.stderr


@pytest.mark.parametrize("body,message", [
    ("let x = " + "(" * 300 + "1" + ")" * 300, "nested more than 256 levels deep"),
    ("let x = " + "-" * 300 + "1", "nested more than 256 levels deep"),
    ("let x = " + "+".join(["1"] * 100000), "expression nested more than 128 levels deep"),
    ("if true {\n" * 200 + "}\n" * 200, "statements nested more than 128 levels deep"),
    ("if true {\n}" + " else if true {\n}" * 5000, "statements nested more than 128 levels deep"),
], ids=["parentheses", "unary", "sum-chain", "blocks", "else-if-chain"])
def test_deep_nesting_is_refused_not_a_stack_overflow(build_dir, tmp_path, body, message):
    f = tmp_path / "deep.cad"
    f.write_text("algorithm a : bcast\n{\n" + body + "\n}\n")
    run = cadc(build_dir, "check", f, check=1)
    assert message in run.stderr and "[CAD-E001]" in run.stderr
    # A long line is quoted as a window around the column.
    assert max(len(line) for line in run.stderr.splitlines()) < 200


def test_deep_json_is_refused_in_linear_time(build_dir, tmp_path):
    def doc(value):
        return json.dumps({"cad": 1, "algorithms": [{"name": "a", "collective": "bcast",
                                                     "body": [{"let": "x", "value": value}]}]})
    e = 1
    for _ in range(130):
        e = {"op": "-", "args": [e]}
    f = tmp_path / "deep.json"
    f.write_text(doc(e))
    run = cadc(build_dir, "check", f, check=1)
    assert "expression nested more than 128 levels deep [CAD-E011]" in run.stderr
    # Keys of two forms at every level: a validator that tried both forms
    # below each level would take 2^300 steps.
    e = 1
    for _ in range(300):
        e = {"op": "-", "call": "x", "args": [e]}
    f.write_text(doc(e))
    run = cadc(build_dir, "check", f, check=1)
    assert "[CAD-E011]" in run.stderr
    f.write_text("[" * 100000 + "]" * 100000)
    run = cadc(build_dir, "check", f, check=1)
    assert "nested more than 1024 levels deep [CAD-E011]" in run.stderr


def test_unreadable_inputs_are_usage_errors(build_dir, tmp_path):
    run = cadc(build_dir, "check", tmp_path, check=2)
    assert "it is a directory" in run.stderr
    run = cadc(build_dir, "check", "/dev/zero", check=2)
    assert "larger than 67108864 bytes" in run.stderr
    run = cadc(build_dir, "disasm", "/dev/zero", check=1)
    assert "more bytes than the limit" in run.stderr


def test_fmt_of_crlf_text_is_canonical_and_stable(build_dir, tmp_path):
    f = tmp_path / "crlf.cad"
    f.write_bytes(b"# header\r\r\nalgorithm a : bcast  # trailing \r\n{\r\n  let x = 1  #\r\n}\r\n")
    def fmt(path):  # bytes: text mode would turn a CR into a newline
        run = subprocess.run([str(build_dir / "bin" / "cadc"), "fmt", str(path)], capture_output=True, timeout=60)
        assert run.returncode == 0, run.stderr
        return run.stdout
    once = fmt(f)
    assert b"\r" not in once and once.startswith(b"# header\n# trailing\nalgorithm a : bcast\n")
    (tmp_path / "once.cad").write_bytes(once)
    assert fmt(tmp_path / "once.cad") == once


# ---- the operator compiler, a module of its own ----

def test_cadc_starts_without_the_operator_compiler(build_dir, tmp_path):
    """The operator compiler (libclang, libLLVM) is libcadc-opc.so in the lib
    folder beside cadc's bin folder, loaded only to compile a C file: cadc
    without it does everything else; compiling an operator then fails with
    a clear error (exit 2), as it does with a module that is not this
    build's.  A .cadop file needs no compiler."""
    op = ROOT / "algorithms" / "ops" / "complex_mul.c"
    (tmp_path / "bin").mkdir()
    (tmp_path / "lib").mkdir()
    exe = tmp_path / "bin" / "cadc"
    shutil.copy(build_dir / "bin" / "cadc", exe)
    run = lambda *args: subprocess.run([str(exe), *map(str, args)], capture_output=True, text=True, timeout=120)
    r = run("verify", ROOT / "algorithms" / "bcast_binomial.cad", "--ranks", "1..4", "--sizes", "3")
    assert r.returncode == 0, r.stdout + r.stderr
    r = run("op", "compile", op, "-o", tmp_path / "x.cadop")
    assert r.returncode == 2, r.stdout + r.stderr
    assert f"cadc: error: cannot load the operator compiler {tmp_path}/lib/libcadc-opc.so: " in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and not (tmp_path / "x.cadop").exists()
    shutil.copy(next(Path("/lib/x86_64-linux-gnu").glob("libm.so.6")), tmp_path / "lib" / "libcadc-opc.so")
    r = run("op", "compile", op, "-o", tmp_path / "x.cadop")
    assert r.returncode == 2 and "is not this cadc's (another build?)" in r.stderr, r.stdout + r.stderr
    # The real one, and the .cadop it writes read back without it.
    cadc(build_dir, "op", "compile", op, "-o", tmp_path / "x.cadop", check=0)
    (tmp_path / "lib" / "libcadc-opc.so").unlink()
    r = run("op", "disasm", tmp_path / "x.cadop")
    assert r.returncode == 0 and "complex_mul" in r.stdout, r.stdout + r.stderr


# ---- a library given where an algorithm or a program is expected ----

def test_check_and_disasm_recognise_a_library(build_dir, tmp_path):
    """cadc check LIB checks it as the runtime loads it (format, hash, every
    algorithm's source), whatever its name; cadc disasm LIB says it is a
    library and what to use instead."""
    lib = build_dir / "lib" / "cad-std.cadlib"
    out = json.loads(cadc(build_dir, "check", "--json", lib, check=0).stdout)
    names = {a["name"] for a in out["algorithms"]}
    assert "bcast_binomial" in names and len(names) == len(list((ROOT / "algorithms").glob("*.cad"))), names
    renamed = tmp_path / "lib.json"
    shutil.copy(lib, renamed)
    assert cadc(build_dir, "check", renamed, check=0).stdout == ""
    tampered = tmp_path / "t.cadlib"
    tampered.write_text(lib.read_text().replace("bcast_binomial", "bcast_binomiaL", 1))
    r = cadc(build_dir, "check", tampered, check=1)
    assert "hash" in r.stderr and "Traceback" not in r.stderr, r.stderr
    r = cadc(build_dir, "disasm", lib, check=2)
    assert f"{lib} is a CAD library (.cadlib), not a CAD program: `cadc lib show {lib}`" in r.stderr, r.stderr


def test_info_is_cadruns_and_lists_every_setting(build_dir):
    env = {"PATH": os.environ["PATH"], "CADRT_PROOF": "strict"}
    info = subprocess.run([str(build_dir / "bin" / "cadc"), "info"], capture_output=True, text=True, timeout=60,
                          env=env)
    assert info.returncode == 0 and info.stdout.startswith("cadc 0.1.0, CAD program format 1\n"), info
    other = subprocess.run([str(build_dir / "bin" / "cadrun"), "--info"], capture_output=True, text=True, timeout=60,
                           env=env)
    assert info.stdout.split("\n", 1)[1] == other.stdout.split("\n", 1)[1]
    table = subprocess.run([str(build_dir / "bin" / "cadrun"), "--settings=markdown"], capture_output=True,
                           text=True, timeout=30, check=True).stdout
    names = re.findall(r"^\| `([A-Z_<>]+)`", table, re.M)
    assert len(names) > 20 and all(re.search(rf"^  {re.escape(n)} ", info.stdout, re.M) for n in names), info.stdout
    assert re.search(r"^  CADRT_PROOF +strict +online$", info.stdout, re.M), info.stdout
