"""connection/protocol_cache.py: kafka-python's classes and codecs built through the cache are the ones built
without it, on the run that fills the cache and on the runs that read it; a bad or unwritable cache costs only
the saving. The processes are child interpreters (the cache must be installed before kafka-python's protocol
modules import, which this process did long ago)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kafka_txn_tools.connection.protocol_cache import ProtocolCache

# Builds classes (kafka-python's own and the broker's share-group messages, from another package's schemas),
# encodes requests and decodes a response with generated codecs, and reports what it got.
PROBE = textwrap.dedent("""
    import hashlib, json, sys
    from kafka_txn_tools.connection.kafka_package import load_lazily
    load_lazily()
    if sys.argv[1] == "cache":
        from kafka_txn_tools.connection import protocol_cache
        cache = protocol_cache.install()
        assert cache is not None
    from kafka.protocol.admin import DescribeProducersRequest, ListTransactionsResponse
    from kafka.protocol.metadata import MetadataRequest
    from kafka_txn_broker.formats.messages import ShareGroupHeartbeatRequest
    out = {}
    for cls, version, fields in (
            (MetadataRequest, 12, {"topics": None, "allow_auto_topic_creation": False}),
            (DescribeProducersRequest, 0, {"topics": [DescribeProducersRequest.TopicRequest(
                name="orders", partition_indexes=[0, 3])]}),
            (ShareGroupHeartbeatRequest, 1, {"group_id": "g", "member_id": "m", "member_epoch": 0,
                                             "rack_id": None, "subscribed_topic_names": ["orders"]})):
        request = cls[version](**fields)
        out[cls.__name__] = [request.encode(version=version).hex(),
                             hashlib.sha256(json.dumps(cls._json, sort_keys=True).encode()).hexdigest()]
    response = ListTransactionsResponse[0](
        throttle_time_ms=0, error_code=0, unknown_state_filters=[], transaction_states=[
            ListTransactionsResponse.TransactionState(transactional_id="tx", producer_id=7,
                                                      transaction_state="Ongoing")])
    body = response.encode(version=0)
    answer = ListTransactionsResponse[0].decode(body)
    out["encoded_response"] = body.hex()
    out["decoded"] = [answer.error_code, [(t.transactional_id, t.producer_id, t.transaction_state)
                                          for t in answer.transaction_states]]
    if sys.argv[1] == "cache":
        out["added"] = len(cache._new)  # what this run could not take from the cache
    print(json.dumps(out))
""")


def probe(mode: str, cache_dir: Path) -> dict[str, object]:
    env = {**os.environ, "KAFKA_TXN_CACHE_DIR": str(cache_dir)}
    done = subprocess.run([sys.executable, "-c", PROBE, mode], capture_output=True, text=True, timeout=120,
                          check=False, env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def cache_files(cache_dir: Path) -> list[Path]:
    return sorted(cache_dir.glob("protocol-*.bin")) if cache_dir.exists() else []


@pytest.mark.e2e
def test_classes_and_codecs_are_the_same_built_through_the_cache(tmp_path: Path) -> None:
    plain = probe("plain", tmp_path)
    assert cache_files(tmp_path) == []  # nothing installed, nothing written
    filling = probe("cache", tmp_path)
    [written] = cache_files(tmp_path)
    size = written.stat().st_size
    reading = probe("cache", tmp_path)
    assert filling.pop("added") > 0 and reading.pop("added") == 0  # the third run took everything from the cache
    assert plain == filling == reading
    assert plain["decoded"] == [0, [["tx", 7, "Ongoing"]]]
    assert written.stat().st_size == size  # nothing new to write


@pytest.mark.e2e
def test_a_corrupt_cache_is_rebuilt_and_an_unwritable_one_skipped(tmp_path: Path) -> None:
    plain = probe("plain", tmp_path / "none")
    probe("cache", tmp_path)
    [written] = cache_files(tmp_path)
    written.write_bytes(b"\x00not marshal at all")
    rebuilt = probe("cache", tmp_path)
    assert rebuilt.pop("added") > 0 and rebuilt == plain
    assert written.stat().st_size > 1000  # rebuilt
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("")
    unwritable = probe("cache", blocked)  # its directory cannot be made: no cache, same results
    unwritable.pop("added")
    assert unwritable == plain


@pytest.mark.unit
def test_every_hit_is_a_fresh_object_so_a_callers_change_never_reaches_the_file(tmp_path: Path) -> None:
    cache = ProtocolCache(tmp_path / "c.bin")
    cache.put("json:x", {"fields": [{"name": "a"}]})
    first = cache.get("json:x")
    first["fields"].append({"name": "changed"})
    assert cache.get("json:x") == {"fields": [{"name": "a"}]}
    cache.save()
    again = ProtocolCache(tmp_path / "c.bin")
    again.load()
    assert again.get("json:x") == {"fields": [{"name": "a"}]} and again.get("json:y") is None


@pytest.mark.unit
def test_saves_merge_what_another_process_wrote_meanwhile(tmp_path: Path) -> None:
    path = tmp_path / "c.bin"
    one, two = ProtocolCache(path), ProtocolCache(path)
    one.load()
    two.load()
    one.put("json:a", 1)
    two.put("json:b", 2)
    one.save()
    two.save()
    merged = ProtocolCache(path)
    merged.load()
    assert (merged.get("json:a"), merged.get("json:b")) == (1, 2)


@pytest.mark.unit
def test_a_generated_source_is_compiled_once_and_other_calls_pass_through(tmp_path: Path) -> None:
    cache = ProtocolCache(tmp_path / "c.bin")
    source = "def _decode(data, pos):\n    return data[pos], pos + 1\n"
    code = cache.compile(source, "<codegen_decode:x_v0>", "exec")
    namespace: dict[str, object] = {}
    exec(cache.compile(source, "<codegen_decode:x_v0>", "exec"), namespace)  # noqa: S102 - the hit
    assert namespace["_decode"](b"ab", 1) == (98, 2)  # type: ignore[operator]
    assert code.co_filename == "<codegen_decode:x_v0>"
    assert cache.compile("1 + 1", "<x>", "eval", dont_inherit=True) is not None  # flags: not cached
    assert len(cache._new) == 1


@pytest.mark.unit
def test_a_schema_of_another_package_is_always_read(tmp_path: Path) -> None:
    """The broker's own definitions of the messages kafka-python lacks can change under the same name within one
    kafka-python release, which names the file: they are never cached."""
    cache = ProtocolCache(tmp_path / "c.bin")
    reads: list[tuple[str, object]] = []

    def original(msg_type: str, package: object = None) -> dict[str, object]:
        reads.append((msg_type, package))
        return {"name": msg_type, "version": len(reads)}

    load_json = cache.load_json(original)
    assert load_json("Share", "kafka_txn_broker.formats.messages")["version"] == 1
    assert load_json("Share", "kafka_txn_broker.formats.messages")["version"] == 2  # read again: a change is seen
    assert load_json("Metadata")["version"] == 3
    assert load_json("Metadata")["version"] == 3  # kafka-python's own: read once
    assert len(reads) == 3 and list(cache._new) == ["json:Metadata"]
