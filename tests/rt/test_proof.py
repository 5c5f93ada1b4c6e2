"""The proof gate end to end: a library (proof_lib/) whose rules push
algorithms beyond what their proofs cover -- P, a parameter, an element
size, an op -- run by rt_proof under cadrun on every user-space engine,
and the same calls through MPI with libcadmpi.so (the kernel engine's run
is in tests/kmod/test_kernel_engine.py).  Whatever runs must be right and
must be what the rules and CADRT_PROOF allow: online proves on arrival
and refuses what does not verify, strict refuses whatever is outside,
off lets all run (and then rt_proof sees the wrong results: the control
that shows the gate is what keeps them out)."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from test_runtime import build_library, run

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "mpi"))
from mpijob import mpirun, through  # noqa: E402

HERE = Path(__file__).resolve().parent
ENGINES = ["poll", "thread", "signal"]


@pytest.fixture(scope="module")
def proof_library(build_dir, tmp_path_factory):
    d = tmp_path_factory.mktemp("proof")
    return build_library(build_dir, HERE / "proof_lib", d / "proof.cadlib")


def rt_proof(build_dir, lib, p, program="rt_proof", **env):
    return run(build_dir, p, program, env={"CADRT_LIBRARY": str(lib), **env})


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("p", [1, 3, 4, 5])
def test_only_what_is_proven_runs(build_dir, proof_library, engine, p):
    r = rt_proof(build_dir, proof_library, p, CADRT_ENGINE=engine)
    assert r.returncode == 0 and "rt_proof: ok" in r.stdout, r.stdout + r.stderr
    assert "WRONG" not in r.stderr


@pytest.mark.parametrize("p", [1, 4])
def test_strict_refuses_what_is_outside(build_dir, proof_library, p):
    r = rt_proof(build_dir, proof_library, p, CADRT_PROOF="strict")
    assert r.returncode == 0 and "rt_proof: ok" in r.stdout, r.stdout + r.stderr


def test_off_lets_the_wrong_algorithms_run(build_dir, proof_library):
    r = rt_proof(build_dir, proof_library, 4, CADRT_PROOF="off")
    assert r.returncode != 0, r.stdout + r.stderr
    assert "cadrt: warning: CADRT_PROOF=off" in r.stderr
    assert "rt_proof: WRONG" in r.stderr and "f64_i32 with minloc" in r.stderr, r.stderr


@pytest.mark.parametrize("p", [1, 3])
def test_exact_verifies_every_size(build_dir, proof_library, p):
    """Outside every size class of bcast_trap's arithmetic, at 164 bytes,
    it is wrong: exact verifies that size before it runs, and refuses it."""
    r = run(build_dir, p, "rt_proof", "--trap", env={"CADRT_LIBRARY": str(proof_library), "CADRT_PROOF": "exact",
                                                     "CADRT_EXPLAIN": "1"})
    assert r.returncode == 0 and "rt_proof: ok" in r.stdout, r.stdout + r.stderr
    if p > 1:
        assert ("/rules/2 bcast_trap: inside its proven domain; n=164 is none of its key's size classes, and it does "
                "not verify there") in r.stderr, r.stderr
    # The rest of the library under exact, too.
    r = rt_proof(build_dir, proof_library, p, CADRT_PROOF="exact")
    assert r.returncode == 0 and "rt_proof: ok" in r.stdout, r.stdout + r.stderr


def test_online_takes_sizes_on_the_size_class_argument(build_dir, proof_library):
    """The limit of the default policy, shown: a program that hides a bug
    from every size class of its arithmetic runs there under online."""
    r = run(build_dir, 3, "rt_proof", "--trap", env={"CADRT_LIBRARY": str(proof_library)})
    assert r.returncode != 0 and "rt_proof: WRONG" in r.stderr and "bcast of 164 B" in r.stderr, r.stderr


def test_the_gate_under_the_sanitizers(build_dir, proof_library):
    r = rt_proof(build_dir, proof_library, 4, program="rt_proof_san")
    assert r.returncode == 0 and "rt_proof: ok" in r.stdout, r.stdout + r.stderr


def test_explain_says_what_the_gate_decided(build_dir, proof_library):
    r = rt_proof(build_dir, proof_library, 4, CADRT_EXPLAIN="1")
    assert r.returncode == 0, r.stdout + r.stderr
    e = r.stderr
    assert ("/rules/1 bcast_wrong_from_4: outside its proven domain (P=4 is beyond the proven 1..3), and it does "
            "not verify there: bcast_wrong_from_4.cad:") in e and "[CAD-E032]" in e, e
    assert "/rules/3 bcast_segments: outside its proven domain (seg=16 was not verified (seg = 1,64))" in e, e
    assert re.search(r"/rules/5 bcast_segments: chosen: outside its proven domain \(seg=4 was not verified "
                     r"\(seg = 1,64\)\): proven on arrival, \d+ instances in [\d.]+ ms", e), e
    assert "/rules/7 allreduce_for_sum: written for the op sum, not minloc" in e, e
    assert "/rules/8 allreduce_wide_drops_last: outside its proven domain (element size 16 was not verified)" in e, e
    assert "/rules/9 allreduce_in_order: chosen\n" in e, e


def test_the_proof_cache_file(build_dir, proof_library, tmp_path):
    cache = tmp_path / "proofs"
    first = rt_proof(build_dir, proof_library, 4, CADRT_PROOF_CACHE=str(cache), CADRT_EXPLAIN="1")
    assert first.returncode == 0, first.stdout + first.stderr
    # Said once per job: its verdicts are trusted.
    assert first.stderr.count(f"cadrt: CADRT_PROOF_CACHE={cache}: verdicts of earlier proofs on arrival are taken "
                              "from it") == 1, first.stderr
    lines = cache.read_text().splitlines()
    # Three keys proven on arrival (seg = 16, seg = 4, the 16-byte pairs)
    # and the broadcast at P = 4, each by every rank that had not read
    # another's verdict from the file before it needed it.
    verdicts = {tuple(l.split("\t")[1:3]) for l in lines}
    assert len(verdicts) == 4 and 4 <= len(lines) <= 16, lines
    assert sorted(v for _, v in verdicts) == ["0", "0", "0", "1"], verdicts
    again = rt_proof(build_dir, proof_library, 4, CADRT_PROOF_CACHE=str(cache), CADRT_EXPLAIN="1")
    assert again.returncode == 0, again.stdout + again.stderr
    assert cache.read_text().splitlines() == lines  # nothing proven again
    def notes(e, kept):
        found = re.findall(r"(outside its proven domain.*?)(, \d+ instances in [\d.]+ ms)?( \(the verdict kept "
                           r"in CADRT_PROOF_CACHE\))?$", e, re.M)
        assert kept is None or all(bool(k) == kept for _, _, k in found), e
        return sorted(n for n, _, _ in found)
    # (In the first run, a rank may read a verdict another rank wrote
    # before it first needed one.)
    assert notes(again.stderr, True) == notes(first.stderr, None)
    # Another library's verdicts are not this one's: the hash keys them.
    cache.write_text("".join(l.replace("fnv1a64:", "fnv1a64:0", 1) + "\n" for l in lines))
    other = rt_proof(build_dir, proof_library, 4, CADRT_PROOF_CACHE=str(cache))
    assert other.returncode == 0 and len(cache.read_text().splitlines()) > len(lines), other.stderr


def test_an_instance_too_large_to_prove_on_arrival_is_refused(build_dir, proof_library):
    """Over CADRT_PROOF_MAX_OPS a proof on arrival would stall the call:
    refused, with the verifier's limit in the note, and the next rule's
    algorithm runs."""
    r = run(build_dir, 4, "rt_check", "--coll", "bcast", "--sizes", "1000", "--roots", "1",
            env={"CADRT_LIBRARY": str(proof_library), "CADRT_PROOF_MAX_OPS": "20", "CADRT_EXPLAIN": "1"})
    assert r.returncode == 0 and "rt_check: ok" in r.stdout, r.stdout + r.stderr
    assert re.search(r"/rules/5 bcast_segments: outside its proven domain \(seg=4 was not verified \(seg = 1,64\)\), "
                     r"and it does not verify there: .*more than 20 operations.*\[CAD-E026\]", r.stderr), r.stderr
    assert "(4000 B): bcast_linear, by the rules" in r.stderr, r.stderr


@pytest.mark.parametrize("setting,message", [
    ({"CADRT_PROOF": "maybe"}, "CADRT_PROOF=maybe: not one of online, exact, strict, off"),
    ({"CADRT_PROOF": "strict", "CADRT_PROOF_CACHE": "/tmp/x"},
     "CADRT_PROOF_CACHE=/tmp/x: proofs on arrival are made only under CADRT_PROOF=online or exact"),
    ({"CADRT_PROOF_MAX_OPS": "lots"}, "CADRT_PROOF_MAX_OPS=lots: not a number of operations from 1 to"),
    ({"CADRT_PROOF_MAX_OPS": "0"}, "CADRT_PROOF_MAX_OPS=0: not a number of operations from 1 to"),
])
def test_bad_settings(build_dir, proof_library, setting, message):
    r = rt_proof(build_dir, proof_library, 2, **setting)
    assert r.returncode != 0 and message in r.stderr, r.stdout + r.stderr


def test_a_forced_algorithm_passes_the_gate_too(build_dir, proof_library):
    env = {"CADRT_LIBRARY": str(proof_library), "CADRT_ALGORITHM_BCAST": "bcast_wrong_from_4"}
    ok = run(build_dir, 3, "rt_check", "--coll", "bcast", "--roots", "1", "--sizes", "10", env=env)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    refused = run(build_dir, 4, "rt_check", "--coll", "bcast", "--roots", "1", "--sizes", "10",
                  env={**env, "CADRT_VERBOSE": "1"})
    assert refused.returncode != 0, refused.stdout + refused.stderr
    assert ("CADRT_ALGORITHM_BCAST=bcast_wrong_from_4: bcast P=4 n=40 root=0 topology=hwloc is outside its proven "
            "domain (P=4 is beyond the proven 1..3), and it does not verify there") in refused.stderr, refused.stderr


def test_a_placement_no_proof_covered_is_proven_on_arrival(build_dir, tmp_path):
    """The standard library's NUMA-aware broadcast, proven on the flat
    machine, two sockets and two nodes, on a machine whose four ranks each
    have a NUMA domain of their own (CADRT_TOPOLOGY): a placement no proof
    covered, proven when the call arrives; results right."""
    machine = tmp_path / "four-numa.json"
    machine.write_text('{"name": "four-numa", "nodes": 1, "packages_per_node": 1, "numa_per_package": 4, '
                       '"l3_per_numa": 1, "cores_per_l3": 1}')
    env = {"CADRT_TOPOLOGY": str(machine), "CADRT_ALGORITHM_BCAST": "bcast_hier_pipeline", "CADRT_EXPLAIN": "1"}
    r = run(build_dir, 4, "rt_check", "--coll", "bcast", "--sizes", "1,1000", "--roots", "2", env=env)
    assert r.returncode == 0 and "rt_check: ok" in r.stdout, r.stdout + r.stderr
    assert re.search(r"cadrt:   outside its proven domain \(the ranks' placement \(four-numa\) was not verified\): "
                     r"proven on arrival, \d+ instances", r.stderr), r.stderr
    # On two nodes of two ranks each, as the sweep's two-node machine
    # places four ranks at its NUMA level: inside.
    machine.write_text('{"name": "like-two-node", "nodes": 2, "packages_per_node": 1, "numa_per_package": 2, '
                       '"l3_per_numa": 1, "cores_per_l3": 3, "mapping": "cyclic"}')
    r = run(build_dir, 4, "rt_check", "--coll", "bcast", "--sizes", "1", "--roots", "1", env=env)
    assert r.returncode == 0 and "outside its proven domain" not in r.stderr, r.stdout + r.stderr


def test_through_mpi(build_dir, proof_library):
    """The same calls from an MPI program: every one through cadrt (the
    refused algorithms are served by the next rule), every result right."""
    r = mpirun(build_dir, 4, program="mpi_proof",
               env={"CADRT_LIBRARY": str(proof_library), "CADMPI_STATS": "1", "CADRT_EXPLAIN": "1"})
    assert r.returncode == 0 and r.stdout.count("rt_proof: ok") == 4, r.stdout + r.stderr
    assert through(r.stderr) == [(8, 0)] * 4, r.stderr
    chosen = re.findall(r"cadrt: rank 0 of communicator \d+: (\w+) P=4 n=(\d+).*: (\w+), by the rules", r.stderr)
    assert ("bcast", "40", "bcast_linear") in chosen and ("bcast", "400", "bcast_linear") in chosen, chosen
    assert ("bcast", "4000", "bcast_segments") in chosen and ("allreduce", "10", "allreduce_in_order") in chosen, chosen
