"""The content hash of .cadop and .cadlib files, as docs/files.md defines
it: tests re-hash with this, so that a mutated file gets past the hash to
the check they aim at, and so that the documented definition is shown to
be implementable from the text alone."""

import json


def content_hash(doc: dict) -> str:
    body = {k: v for k, v in doc.items() if k != "hash"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    h = 0xcbf29ce484222325
    for byte in text:
        h = ((h ^ byte) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return f"fnv1a64:{h:016x}"


def rehashed(doc: dict) -> dict:
    """doc with the hash of its content, as cadc writes it."""
    return {**doc, "hash": content_hash(doc)}
