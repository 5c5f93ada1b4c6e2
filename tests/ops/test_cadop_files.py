"""`.cadop` files as their readers take them (docs/files.md): JSON without a
key twice, every key validated against schemas/cadop.schema.json and the
rules it cannot say, the content hash, then the core verifier; each refusal
CAD-E063 at the JSON pointer of what is wrong.  The hash is recomputed here
from its documented definition, which checks that the definition is
implementable (tests/content_hash.py), and lets a mutated file reach the
check after the hash."""

import copy
import json
import subprocess
from pathlib import Path

import jsonschema
import pytest

from content_hash import content_hash, rehashed

ROOT = Path(__file__).resolve().parents[2]
OPS = ROOT / "algorithms" / "ops"
SCHEMA = json.loads((ROOT / "schemas" / "cadop.schema.json").read_text())


def cadc(build_dir, *args):
    return subprocess.run([str(build_dir / "bin" / "cadc"), *map(str, args)], capture_output=True, text=True,
                          timeout=60)


def compile_op(build_dir, out_dir: Path, name: str) -> dict:
    out = out_dir / f"{name}.cadop"
    r = cadc(build_dir, "op", "compile", OPS / f"{name}.c", "-I", OPS, "-o", out)
    assert r.returncode == 0, r.stderr
    return json.loads(out.read_text())


@pytest.fixture(scope="module")
def maxloc(build_dir, tmp_path_factory):
    """maxloc: struct dloc { double; int; }, fields [[0, "f64"], [8, "i32"]], 16 bytes."""
    doc = compile_op(build_dir, tmp_path_factory.mktemp("cadop"), "maxloc")
    assert doc["ops"][0]["fields"] == [[0, "f64"], [8, "i32"]] and doc["ops"][0]["elem_size"] == 16
    return doc


def first_error(build_dir, path: Path):
    """cadc op check --json on path: (exit status, the first error or None)."""
    r = cadc(build_dir, "op", "check", "--json", path)
    assert "Traceback" not in r.stderr and "terminate" not in r.stderr, r.stderr
    errors = [d for d in json.loads(r.stdout)["diagnostics"] if d["severity"] == "error"] if r.stdout.strip() else []
    return r.returncode, (errors[0] if errors else None)


def test_compiled_file_follows_schema_and_hash(maxloc):
    jsonschema.validate(maxloc, SCHEMA)
    assert maxloc["cadop"] == 2
    assert maxloc["hash"] == content_hash(maxloc)


# name: (mutation of the document, JSON pointer of the error, words of its message).  Each
# mutated document is re-hashed, so that the validator, not the hash, refuses it.
SCHEMA_CASES = {
    "unknown_kind": (lambda d: d["ops"][0]["fields"][1].__setitem__(1, "f128"), "/ops/0/fields/1/1",
                     'must be one of "i8"'),
    "kind_not_a_string": (lambda d: d["ops"][0]["fields"][0].__setitem__(1, 8), "/ops/0/fields/0/1", "must be one of"),
    "f64_past_the_element": (lambda d: d["ops"][0]["fields"].__setitem__(1, [12, "f64"]), "/ops/0/fields/1",
                             "a f64 at byte 12 ends at byte 20, past the end of the element (elem_size 16)"),
    "i32_past_the_element": (lambda d: d["ops"][0]["fields"][1].__setitem__(0, 13), "/ops/0/fields/1",
                             "ends at byte 17, past the end"),
    "fields_overlap": (lambda d: d["ops"][0]["fields"][1].__setitem__(0, 4), "/ops/0/fields/1/0",
                       "overlaps the field before it"),
    "fields_out_of_order": (lambda d: d["ops"][0]["fields"].reverse(), "/ops/0/fields/1/0", "in order of offset"),
    "field_offset_negative": (lambda d: d["ops"][0]["fields"][0].__setitem__(0, -1), "/ops/0/fields/0/0",
                              "at least 0"),
    "field_offset_huge": (lambda d: d["ops"][0]["fields"][0].__setitem__(0, 2**40), "/ops/0/fields/0/0",
                          "at most 255"),
    "field_of_three": (lambda d: d["ops"][0]["fields"][0].append(1), "/ops/0/fields/0", "at most 2 items"),
    "elem_size_zero": (lambda d: d["ops"][0].update(elem_size=0), "/ops/0/elem_size", "at least 1"),
    "elem_size_negative": (lambda d: d["ops"][0].update(elem_size=-16), "/ops/0/elem_size", "at least 1"),
    "elem_size_over_the_vm": (lambda d: d["ops"][0].update(elem_size=257), "/ops/0/elem_size", "at most 256"),
    "elem_size_float": (lambda d: d["ops"][0].update(elem_size=16.0), "/ops/0/elem_size", "must be an integer"),
    "line_over_32_bits": (lambda d: d["ops"][0].update(line=2**32), "/ops/0/line", "at most 4294967295"),
    "col_over_64_bits": (lambda d: d["ops"][0].update(col=2**64), "/ops/0/col", "must be an integer"),
    "opcode_over_a_byte": (lambda d: d["ops"][0]["code"][0].__setitem__(0, 256), "/ops/0/code/0/0", "at most 255"),
    "register_negative": (lambda d: d["ops"][0]["code"][1].__setitem__(1, -1), "/ops/0/code/1/1", "at least 0"),
    "imm_over_32_bits": (lambda d: d["ops"][0]["code"][0].__setitem__(4, 2**31), "/ops/0/code/0/4",
                         "at most 2147483647"),
    "instruction_of_four": (lambda d: d["ops"][0]["code"][2].pop(), "/ops/0/code/2", "at least 5 items"),
    "no_code": (lambda d: d["ops"][0].update(code=[]), "/ops/0/code", "at least 1 items"),
    "const_not_hex": (lambda d: d["ops"][0]["consts"].append("0x12"), "/ops/0/consts/0", "does not match"),
    "const_uppercase": (lambda d: d["ops"][0]["consts"].append("0x3FF0000000000000"), "/ops/0/consts/0",
                        "does not match"),
    "commutative_a_string": (lambda d: d["ops"][0].update(commutative="yes"), "/ops/0/commutative",
                             "must be a boolean"),
    "name_a_number": (lambda d: d["ops"][0].update(name=5), "/ops/0/name", "must be a string"),
    "name_not_c": (lambda d: d["ops"][0].update(name="max loc"), "/ops/0/name", "does not match"),
    "type_an_array": (lambda d: d["ops"][0].update(type=["struct dloc"]), "/ops/0/type", "must be a string"),
    "ops_an_object": (lambda d: d.update(ops={}), "/ops", "must be an array"),
    "no_ops": (lambda d: d.update(ops=[]), "/ops", "at least 1 items"),
    "extra_key": (lambda d: d.update(comment="hi"), "/", 'unknown key "comment"'),
    "extra_key_in_op": (lambda d: d["ops"][0].update(size=16), "/ops/0", 'unknown key "size"'),
    "missing_fields": (lambda d: d["ops"][0].pop("fields"), "/ops/0", 'lacks the required "fields"'),
    "missing_hash": (lambda d: d.pop("hash"), "/", 'lacks the required "hash"'),
    "hash_of_another_kind": (lambda d: d.update(hash="sha256:" + "0" * 64), "/hash", "does not match"),
    "two_ops_one_name": (lambda d: d["ops"].append(copy.deepcopy(d["ops"][0])), "/ops/1/name",
                         "a second operator named maxloc (the first is /ops/0)"),
    "format_1": (lambda d: d.update(cadop=1), "/cadop", "rebuild it with cadc op compile"),
    "format_3": (lambda d: d.update(cadop=3), "/cadop", "must be 2"),
}


@pytest.mark.parametrize("name", SCHEMA_CASES)
def test_schema_violation_is_located(build_dir, tmp_path, maxloc, name):
    mutate, pointer, words = SCHEMA_CASES[name]
    doc = copy.deepcopy(maxloc)
    mutate(doc)
    if name not in ("missing_hash", "hash_of_another_kind"):
        doc = rehashed(doc)
    f = tmp_path / "bad.cadop"
    f.write_text(json.dumps(doc, indent=1))
    status, err = first_error(build_dir, f)
    assert status == 1 and err is not None, (status, err)
    assert (err["code"], err["location"].get("pointer"), err["location"].get("file")) == ("CAD-E063", pointer, str(f))
    assert words in err["message"], err["message"]


def test_text_form_names_the_pointer(build_dir, tmp_path, maxloc):
    doc = copy.deepcopy(maxloc)
    doc["ops"][0]["fields"][1][1] = "f128"
    f = tmp_path / "kind.cadop"
    f.write_text(json.dumps(rehashed(doc)))
    r = cadc(build_dir, "op", "disasm", f)
    assert r.returncode == 1
    assert f"{f}:/ops/0/fields/1/1: error: must be one of " in r.stderr and "[CAD-E063]" in r.stderr, r.stderr


# name: (text edit of the compact dump, the pointer of the second occurrence)
DUPLICATES = {
    "top_level": (lambda t: t[:-1] + ', "file": "maxloc.c"}', "/file"),
    "top_level_first_key": (lambda t: '{"cadop": 2, ' + t[1:], "/cadop"),
    "in_an_op": (lambda t: t.replace('"name": "maxloc"', '"name": "maxloc", "name": "maxloc"'), "/ops/0/name"),
    "after_nested_arrays": (lambda t: t.replace('"type": "struct dloc"', '"type": "struct dloc", "fields": []'),
                            "/ops/0/fields"),
    "in_the_second_op": (lambda t: t.replace('"struct dloc"}]', '"struct dloc"}, {"name": "b", "col": 1, "col": 1}]'),
                         "/ops/1/col"),
}


@pytest.mark.parametrize("name", DUPLICATES)
def test_duplicate_key_is_refused(build_dir, tmp_path, maxloc, name):
    edit, pointer = DUPLICATES[name]
    text = edit(json.dumps(maxloc, sort_keys=True))
    assert text != json.dumps(maxloc, sort_keys=True)
    f = tmp_path / "dup.cadop"
    f.write_text(text)
    status, err = first_error(build_dir, f)
    key = pointer.rsplit("/", 1)[1]
    assert status == 1 and err["code"] == "CAD-E063", err
    assert err["location"].get("pointer") == pointer and f'the key "{key}" appears twice' in err["message"], err


def test_same_key_in_different_objects_is_no_duplicate(build_dir, tmp_path, maxloc):
    doc = copy.deepcopy(maxloc)
    other = copy.deepcopy(doc["ops"][0])
    other["name"] = "maxloc2"
    doc["ops"].append(other)
    f = tmp_path / "two.cadop"
    f.write_text(json.dumps(rehashed(doc)))
    status, err = first_error(build_dir, f)
    assert status == 0 and err is None, err


# One byte of each value changed: (path to the value, its new value).
ONE_BYTE = {
    "file": (("file",), "maxlod.c"),
    "name": (("ops", 0, "name"), "maxlod"),
    "elem_size": (("ops", 0, "elem_size"), 17),
    "line": (("ops", 0, "line"), 12),
    "col": (("ops", 0, "col"), 7),
    "type": (("ops", 0, "type"), "struct dlod"),
    "op_file": (("ops", 0, "file"), "maxlod.c"),
    "field_kind": (("ops", 0, "fields", 1, 1), "u32"),
    "field_offset": (("ops", 0, "fields", 1, 0), 9),
    "register": (("ops", 0, "code", 0, 1), 1),
}


def _set(doc, path, value):
    for key in path[:-1]:
        doc = doc[key]
    doc[path[-1]] = value


@pytest.mark.parametrize("name", ONE_BYTE)
def test_one_byte_changed_is_a_hash_mismatch(build_dir, tmp_path, maxloc, name):
    path, value = ONE_BYTE[name]
    doc = copy.deepcopy(maxloc)
    _set(doc, path, value)
    before, after = json.dumps(maxloc, indent=1).encode(), json.dumps(doc, indent=1).encode()
    assert len(before) == len(after) and sum(a != b for a, b in zip(before, after)) == 1
    f = tmp_path / "changed.cadop"
    f.write_bytes(after)
    status, err = first_error(build_dir, f)
    assert status == 1 and err["code"] == "CAD-E063" and err["location"].get("pointer") == "/hash", err
    assert "the file was modified after it was written: hash mismatch" in err["message"], err
    assert content_hash(doc) in err["message"], err   # the hash it computes is the documented one
    # Re-hashed, the same change is past the hash: accepted or refused for what it is.
    f.write_text(json.dumps(rehashed(doc), indent=1))
    status, err = first_error(build_dir, f)
    assert status == 0 or "hash" not in err["message"], err


def test_hash_itself_changed(build_dir, tmp_path, maxloc):
    doc = copy.deepcopy(maxloc)
    doc["hash"] = doc["hash"][:-1] + ("0" if doc["hash"][-1] != "0" else "1")
    f = tmp_path / "hash.cadop"
    f.write_text(json.dumps(doc))
    status, err = first_error(build_dir, f)
    assert status == 1 and err["location"].get("pointer") == "/hash" and "hash mismatch" in err["message"], err


def test_missing_file_and_bad_cadop(build_dir, tmp_path):
    cadc_bin = str(build_dir / "bin" / "cadc")
    r = subprocess.run([cadc_bin, "op", "check", str(tmp_path / "none.c")], capture_output=True, text=True)
    assert r.returncode == 2 and "no such file" in r.stderr
    good = tmp_path / "dsum.cadop"
    subprocess.run([cadc_bin, "op", "compile", str(OPS / "dsum.c"), "-o", str(good)], check=True)
    doc = json.loads(good.read_text())
    # Bytecode the verifier refuses, re-hashed: it gets past the hash to the verifier.
    variants = {
        "backward jump": lambda d: d["ops"][0]["code"].insert(0, [1, 0, 0, 0, -1]),
        "unknown opcode": lambda d: d["ops"][0]["code"].insert(0, [250, 0, 0, 0, 0]),
        "outside the": lambda d: d["ops"][0]["code"].insert(0, [0x16, 0, 0, 0, 8]),
        "before it is written": lambda d: d["ops"][0]["code"].insert(0, [0x1b, 0, 5, 0, 0]),
    }
    for words, mutate in variants.items():
        bad = copy.deepcopy(doc)
        mutate(bad)
        f = tmp_path / "bad.cadop"
        f.write_text(json.dumps(bad))
        r = subprocess.run([cadc_bin, "op", "disasm", str(f)], capture_output=True, text=True)
        assert r.returncode == 1 and "hash mismatch" in r.stderr and words not in r.stderr, (words, r.stderr)
        f.write_text(json.dumps(rehashed(bad)))
        r = subprocess.run([cadc_bin, "op", "disasm", str(f)], capture_output=True, text=True)
        assert r.returncode == 1 and words in r.stderr and "core verifier" in r.stderr, (words, r.stderr)
        assert f"{f}:/ops/0/code: error: " in r.stderr and "CAD-E063" in r.stderr, (words, r.stderr)
    no_format = copy.deepcopy(doc)
    no_format.pop("cadop")
    for junk in (b"", b"\x00\xff" * 100, b"[1,2,3]", b'{"cadop": 2, "ops": [{}]}', json.dumps(no_format).encode(),
                 b'{"cadop": 2, "ops": [{"code": [[1e99999]]}]}',  # a number that overflows
                 b'{"cadop": 2, "ops": [' * 2000 + b"]}" * 2000):
        f = tmp_path / "junk.cadop"
        f.write_bytes(junk)
        r = subprocess.run([cadc_bin, "op", "disasm", str(f)], capture_output=True, text=True)
        assert r.returncode == 1 and "CAD-E063" in r.stderr, r.stderr


def test_compile_takes_options_before_and_after_the_file(build_dir, tmp_path):
    """-I and -D take one value each, anywhere on the line, as check and disasm do."""
    src = tmp_path / "scaled.c"
    src.write_text('#include "cad_op.h"\n#ifndef SCALE\n#error SCALE is not defined\n#endif\n'
                   "CAD_OP(commutative)\nvoid scaled(const double *in, double *inout) { *inout += SCALE * *in; }\n")
    out = tmp_path / "scaled.cadop"
    orders = [
        ["-I", OPS, "-D", "SCALE=2", src, "-o", out],
        [src, "-I", OPS, "-D", "SCALE=2", "-o", out],
        ["-o", out, "-D", "SCALE=2", "-I", tmp_path, "-I", OPS, src],
        ["-DSCALE=2", "-I", OPS, src, "--output", out],
    ]
    for args in orders:
        out.unlink(missing_ok=True)
        r = cadc(build_dir, "op", "compile", *args)
        assert r.returncode == 0 and out.exists(), (args, r.stderr)
        assert json.loads(out.read_text())["ops"][0]["name"] == "scaled"
        for sub in ("check", "disasm"):
            r = cadc(build_dir, "op", sub, *[a for a in args if a not in ("-o", "--output", out)])
            assert r.returncode == 0, (sub, args, r.stderr)
    r = cadc(build_dir, "op", "compile", "-I", OPS, src, "-o", out)  # without -D: the #error
    assert r.returncode == 1 and "SCALE is not defined" in r.stderr, r.stderr
    r = cadc(build_dir, "op", "compile", "-I", OPS, "-o", out)
    assert r.returncode == 2 and "file is required" in r.stderr, r.stderr
