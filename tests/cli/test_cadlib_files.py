""".cadlib files as their loader takes them (docs/files.md), through `cadc
lib show` (the runtime's loader, lazily, as cadrt_init runs it): JSON
without a key twice, the schema (the operators with the .cadop schema's
definition), the content hash, then the core verifier on the operators;
each refusal CAD-E040 naming the JSON pointer of what is wrong.  The hash
is recomputed from its documented definition (tests/content_hash.py)."""

import copy
import json
import subprocess
from pathlib import Path

import pytest

from content_hash import content_hash, rehashed


@pytest.fixture(scope="module")
def std(build_dir):
    doc = json.loads((build_dir / "lib" / "cad-std.cadlib").read_text())
    assert doc["hash"] == content_hash(doc)
    assert [o["name"] for o in doc["ops"]][:2] == ["affine", "complex_mul"]
    return doc


def load_error(build_dir, path: Path):
    """cadc lib show --json on path: (exit status, the first error or None)."""
    r = subprocess.run([str(build_dir / "bin" / "cadc"), "lib", "show", "--json", str(path)], capture_output=True,
                       text=True, timeout=60)
    assert "Traceback" not in r.stderr and "terminate" not in r.stderr, r.stderr
    out = json.loads(r.stdout)
    errors = [d for d in out.get("diagnostics", []) if d["severity"] == "error"]
    return r.returncode, (errors[0] if errors else None)


# name: (mutation, words of the message: the pointer and what is wrong); re-hashed.
SCHEMA_CASES = {
    "unknown_kind": (lambda d: d["ops"][1]["fields"][0].__setitem__(1, "f16"),
                     '/ops/1/fields/0/1: must be one of "i8"'),
    "field_past_the_element": (lambda d: d["ops"][1]["fields"][1].__setitem__(0, 12),
                               "/ops/1/fields/1: a f64 at byte 12 ends at byte 20, past the end"),
    "fields_overlap": (lambda d: d["ops"][1]["fields"][1].__setitem__(0, 7),
                       "/ops/1/fields/1/0: a f64 at byte 7 overlaps"),
    "elem_size_negative": (lambda d: d["ops"][0].update(elem_size=-1), "/ops/0/elem_size: must be at least 1"),
    "imm_overflows": (lambda d: d["ops"][0]["code"][0].__setitem__(4, -2**31 - 1), "/ops/0/code/0/4: must be at least"),
    "op_extra_key": (lambda d: d["ops"][0].update(hash="x"), '/ops/0: has an unknown key "hash"'),
    "op_wrong_type": (lambda d: d["ops"][0].update(line="11"), "/ops/0/line: must be an integer"),
    "op_not_an_object": (lambda d: d["ops"].__setitem__(0, []), "/ops/0: must be an object"),
    "two_ops_one_name": (lambda d: d["ops"][1].update(name="affine"),
                         "/ops/1/name: a second operator named affine (the first is /ops/0)"),
    "extra_key": (lambda d: d.update(signature="none"), '/: has an unknown key "signature"'),
    "verified_negative": (lambda d: d["algorithms"][0].update(verified=-5),
                          "/algorithms/0/verified: must be at least 1"),
    "format_1": (lambda d: d.update(cadlib=1), "rebuild it with cadc build"),
}


@pytest.mark.parametrize("name", SCHEMA_CASES)
def test_schema_violation_is_located(build_dir, tmp_path, std, name):
    mutate, words = SCHEMA_CASES[name]
    doc = copy.deepcopy(std)
    mutate(doc)
    f = tmp_path / "bad.cadlib"
    f.write_text(json.dumps(rehashed(doc)))
    status, err = load_error(build_dir, f)
    assert status == 1 and err["code"] == "CAD-E040" and words in err["message"], err


# name: (text edit of the compact dump, the message's pointer)
DUPLICATES = {
    "top_level": (lambda t: t[:-1] + ', "created_by": "me"}', "/created_by"),
    "in_an_op": (lambda t: t.replace('"name": "affine"', '"name": "affine", "name": "dsum"', 1), "/ops/0/name"),
    "in_a_rule": (lambda t: t.replace('"use": "bcast_linear"', '"use": "bcast_linear", "use": "bcast_binomial"', 1),
                  "/rules/rules/0/use"),
    "in_a_domain": (lambda t: t.replace('"instances": ', '"esize": "any", "instances": ', 1),
                    "/algorithms/0/proven/esize"),
}


@pytest.mark.parametrize("name", DUPLICATES)
def test_duplicate_key_is_refused(build_dir, tmp_path, std, name):
    edit, pointer = DUPLICATES[name]
    text = edit(json.dumps(std, sort_keys=True))
    assert text != json.dumps(std, sort_keys=True)
    f = tmp_path / "dup.cadlib"
    f.write_text(text)
    status, err = load_error(build_dir, f)
    key = pointer.rsplit("/", 1)[1]
    assert status == 1 and err["code"] == "CAD-E040", err
    assert f'{pointer}: the key "{key}" appears twice' in err["message"], err


ONE_BYTE = {
    "created_by": lambda d: d.update(created_by=d["created_by"][:-1] + chr(ord(d["created_by"][-1]) ^ 1)),
    "a_source": lambda d: d["sources"][0].update(text=d["sources"][0]["text"].replace("P", "Q", 1)),
    "verified": lambda d: d["algorithms"][0].update(verified=d["algorithms"][0]["verified"] ^ 1),
    "an_op_line": lambda d: d["ops"][2].update(line=d["ops"][2]["line"] ^ 1),
    "a_rule": lambda d: d["rules"]["rules"][0].update(ranks=d["rules"]["rules"][0]["ranks"].replace("3", "2", 1)),
}


@pytest.mark.parametrize("name", ONE_BYTE)
def test_one_byte_changed_is_a_hash_mismatch(build_dir, tmp_path, std, name):
    doc = copy.deepcopy(std)
    ONE_BYTE[name](doc)
    before, after = json.dumps(std).encode(), json.dumps(doc).encode()
    assert len(before) == len(after) and sum(a != b for a, b in zip(before, after)) == 1
    f = tmp_path / "changed.cadlib"
    f.write_bytes(after)
    status, err = load_error(build_dir, f)
    assert status == 1 and err["code"] == "CAD-E040", err
    assert "the file was modified after it was written: hash mismatch" in err["message"], err
    assert content_hash(doc) in err["message"] and "rebuild it with cadc build" in err["message"], err


def test_operator_bytecode_reaches_the_verifier_when_rehashed(build_dir, tmp_path, std):
    doc = copy.deepcopy(std)
    doc["ops"][3]["code"].insert(0, [250, 0, 0, 0, 0])
    f = tmp_path / "op.cadlib"
    f.write_text(json.dumps(doc))
    status, err = load_error(build_dir, f)
    assert status == 1 and "hash mismatch" in err["message"], err
    f.write_text(json.dumps(rehashed(doc)))
    status, err = load_error(build_dir, f)
    assert status == 1 and "/ops/3/code: maxloc: the core verifier rejects its code" in err["message"], err


def test_the_standard_library_loads(build_dir, std, tmp_path):
    f = tmp_path / "std.cadlib"
    f.write_text(json.dumps(std, indent=1))  # another layout, the same content: the same hash
    status, err = load_error(build_dir, f)
    assert status == 0 and err is None, err
