"""Which cluster the sweep's commands reach (spark/origin.py): the sweep's options, then the dump's record,
then $KAFKA_BOOTSTRAP_SERVERS; and whether a command line with them would find a cluster at all."""

from __future__ import annotations

from pathlib import Path

from kafka_txn_tools.admin.advice import Invocation
from kafka_txn_tools.spark.origin import choose

RECORDED = {"bootstrap_server": "kafka-1:9092", "profile": None, "command_config": "/etc/kafka/admin.properties",
            "bootstrap_servers": "kafka-1:9092", "properties": {"security.protocol": "SASL_SSL"}}


def test_a_dumps_record_is_used_when_the_sweep_is_given_nothing() -> None:
    origin = choose(None, [None, RECORDED], "abc", env_bootstrap="env:9092")
    assert origin.invocation == Invocation("kafka-1:9092", None, "/etc/kafka/admin.properties")
    assert origin.source == "dump" and origin.reaches_cluster
    assert origin.plan_connection() == {"bootstrap_server": "kafka-1:9092", "profile": None,
                                        "command_config": "/etc/kafka/admin.properties"}
    assert origin.to_json()["properties"] == {"security.protocol": "SASL_SSL"}


def test_the_sweeps_options_override_the_record_option_by_option() -> None:
    # -b or --profile names the cluster: either replaces both recorded ones; --command-config its own.
    by_profile = choose(Invocation(None, "prod", None), [RECORDED], None)
    assert by_profile.invocation == Invocation(None, "prod", "/etc/kafka/admin.properties")
    assert by_profile.source == "options"
    by_config = choose(Invocation(None, None, "/home/me/admin.properties"), [RECORDED], None)
    assert by_config.invocation == Invocation("kafka-1:9092", None, "/home/me/admin.properties")


def test_the_environment_comes_last_and_nothing_reaches_no_cluster(tmp_path: Path) -> None:
    assert choose(None, [None], None, env_bootstrap="env:9092").invocation == Invocation("env:9092")
    nothing = choose(None, [None], None)
    assert not nothing.reaches_cluster and nothing.plan_connection() is None and nothing.source == "none"
    # A properties file reaches a cluster alone only when it names bootstrap.servers.
    bare, named = tmp_path / "bare.properties", tmp_path / "named.properties"
    bare.write_text("security.protocol=SSL\n")
    named.write_text("bootstrap.servers=k:9092\n")
    assert not choose(Invocation(command_config=str(bare)), [None], None).reaches_cluster
    assert choose(Invocation(command_config=str(named)), [None], None).reaches_cluster
    assert not choose(Invocation(command_config=str(tmp_path / "missing")), [None], None).reaches_cluster
