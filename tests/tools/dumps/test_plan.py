"""The abort plan: writer, loader, validation."""

from __future__ import annotations

import pytest
import yaml

from kafka_txn_tools.dumps import plan

ENTRY = plan.AbortPlanEntry(
    topic="orders", partition=3, start_offset=116, producer_id=2000, producer_epoch=3, coordinator_epoch=-1,
    reason="no-transactional-id", last_timestamp_ms=1_699_990_000_000, leader_broker_id=1,
    replica_broker_ids=[1, 2, 3],
)


def test_roundtrip(tmp_path):
    original = plan.AbortPlan([ENTRY], as_of_ms=1_700_000_000_000, max_transaction_timeout_ms=900_000,
                              cluster_id="7ZyqV1DkQ3aHh1hWm2sJ9A", capture_time_ms=1_699_999_999_000)
    path = tmp_path / "abort-plan.yaml"
    plan.write_plan(original, path)
    text = path.read_text()
    data = yaml.safe_load(text)
    assert (data["version"], data["kind"]) == (2, "kafka-txn-abort-plan")
    assert (data["cluster_id"], data["capture_time_ms"]) == ("7ZyqV1DkQ3aHh1hWm2sJ9A", 1_699_999_999_000)
    assert data["entries"][0]["transactional_id"] is None
    assert plan.load_plan(path) == original
    # A person opening the file sees where and when it was made, and how to apply it.
    assert text.startswith("# Abort plan made by kafka-txn sweep on cluster 7ZyqV1DkQ3aHh1hWm2sJ9A, captured "
                           "2023-11-14T22:13:19Z: 1 entry.\n# Check it with `kafka-txn abort --plan FILE --dry-run`")


def test_a_plan_records_how_its_cluster_is_reached(tmp_path):
    connection = {"bootstrap_server": "kafka-1:9092", "profile": None, "command_config": "/etc/kafka/a b.properties"}
    original = plan.AbortPlan([ENTRY], as_of_ms=1, max_transaction_timeout_ms=900_000, cluster_id="c",
                              connection=connection)
    path = tmp_path / "abort-plan.yaml"
    plan.write_plan(original, path)
    assert plan.load_plan(path) == original
    assert path.read_text().splitlines()[1] == (
        "# Check it with `kafka-txn abort --plan FILE --dry-run --bootstrap-server kafka-1:9092 --command-config "
        "'/etc/kafka/a b.properties'`; apply it with `kafka-txn abort --plan FILE --bootstrap-server kafka-1:9092 "
        "--command-config '/etc/kafka/a b.properties'`.")
    with pytest.raises(plan.PlanError, match="plan.connection: .* is not a mapping of bootstrap_server"):
        plan.load_plan(write(tmp_path, {**doc(), "connection": "kafka-1:9092"}))


def test_a_version_1_plan_is_read_without_a_cluster_id(tmp_path):
    loaded = plan.load_plan(write(tmp_path, {**doc(), "as_of_ms": 5}))
    assert (loaded.version, loaded.cluster_id, loaded.capture_time_ms, loaded.as_of_ms) == (1, None, None, 5)


def write(tmp_path, doc):
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def doc(**entry):
    return {"version": 1, "kind": plan.PLAN_KIND, "entries": [{**plan.plan_to_dict(
        plan.AbortPlan([ENTRY], 0, 0))["entries"][0], **entry}]}


@pytest.mark.parametrize(("data", "message"), [
    ({**doc(), "version": 3}, "version 3 is not supported"),
    ({**doc(), "cluster_id": ""}, "plan.cluster_id: '' is not a cluster id"),
    ({**doc(), "cluster_id": 7}, "plan.cluster_id: 7 is not a cluster id"),
    ({**doc(), "capture_time_ms": "now"}, "plan.capture_time_ms: 'now' is a str"),
    ({**doc(), "kind": "something-else"}, "is this an abort plan"),
    (doc(reason="late"), "'late' is not a hanging reason"),
    (doc(start_offset=-1), r"entries\[0\].start_offset: -1 is negative"),
    (doc(producer_id="abc"), r"entries\[0\].producer_id: 'abc' is a str, not an integer"),
    (doc(partition=1.9), r"entries\[0\].partition: 1.9 is a float, not an integer"),
    (doc(partition="one"), r"entries\[0\].partition: 'one' is a str"),
    (doc(producer_epoch=True), r"entries\[0\].producer_epoch: True is a boolean"),
    (doc(coordinator_epoch="7"), r"entries\[0\].coordinator_epoch: '7' is a str"),
    (doc(topic=3), r"entries\[0\].topic: 3 is not a topic name"),
    (doc(topic=None), r"entries\[0\] lacks topic"),
    (doc(producer_epoch=None), r"entries\[0\] lacks producer_epoch"),
    (doc(start_ofset=3), r"entries\[0\] has unknown fields start_ofset"),
    ({**doc(), "version": True}, "version True is not supported"),
    ([1, 2], "YAML mapping"),
])
def test_invalid_plans_are_refused_with_the_reason(tmp_path, data, message):
    with pytest.raises(plan.PlanError, match=message):
        plan.load_plan(write(tmp_path, data))


def test_unreadable_file(tmp_path):
    with pytest.raises(plan.PlanError, match="cannot read abort plan"):
        plan.load_plan(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("entries: [\n")
    with pytest.raises(plan.PlanError, match="not valid YAML"):
        plan.load_plan(bad)


def test_empty_plan_is_valid(tmp_path):
    loaded = plan.load_plan(write(tmp_path, {"version": 1, "kind": plan.PLAN_KIND, "entries": []}))
    assert loaded.entries == []


def test_a_hand_written_plan_needs_only_the_identifiers(tmp_path):
    entry = {"topic": "orders", "partition": 3, "start_offset": 116, "producer_id": 2000, "producer_epoch": 3}
    loaded = plan.load_plan(write(tmp_path, {"version": 1, "entries": [entry]}))
    assert loaded.entries == [plan.AbortPlanEntry(**entry)]
    assert loaded.entries[0].reason is None and loaded.entries[0].coordinator_epoch is None


def test_a_sweep_plan_records_the_one_cluster_its_inputs_come_from():
    import pytest as _pytest

    from kafka_txn_tools.spark.ingest import InputSpec
    from kafka_txn_tools.spark.job import SweepError, plan_cluster_id

    dump = InputSpec("d", "dump", cluster_ids=frozenset({"A"}))
    logs = InputSpec("l", "logdir", cluster_ids=frozenset({"A"}))
    text = InputSpec("t", "text")  # kafka-dump-log.sh text says nothing about its cluster
    assert plan_cluster_id([dump, logs]) == "A"
    assert plan_cluster_id([dump, text]) is None and plan_cluster_id([text]) is None
    with _pytest.raises(SweepError, match=r"the inputs come from 2 clusters \(A, B\): sweep each cluster on its own"):
        plan_cluster_id([dump, InputSpec("d2", "dump", cluster_ids=frozenset({"B"}))])


def test_an_entry_carries_its_abort_as_one_command_line(tmp_path):
    line = "kafka-txn abort --topic orders --partition 3 --start-offset 116 --bootstrap-server k:9092"
    loaded = plan.load_plan(write(tmp_path, doc(commands=[line])))
    assert loaded.entries[0].commands == [line]
    with pytest.raises(plan.PlanError, match=r"entries\[0\]\.commands: .* is not a list of command lines"):
        plan.load_plan(write(tmp_path, doc(commands=line)))
