"""Output formats (cli/render.py) and upstream's value spellings (cli/upstream/format.py)."""

from __future__ import annotations

import json

import yaml

from kafka_txn_tools.cli.options import OutputFormat
from kafka_txn_tools.cli.render import Column, Output, human_duration, upstream_table
from kafka_txn_tools.cli.upstream.format import describe_row, hanging_row, producer_row
from kafka_txn_tools.models import (
    HangingReason,
    HangingTransaction,
    ProducerState,
    TopicPartition,
    TransactionDescription,
)


def test_upstream_table_is_byte_exact() -> None:
    assert upstream_table(("ProducerId", "Epoch"), []) == "ProducerId\tEpoch\t\n"
    assert upstream_table(("A", "Bee"), [["long-value", "1"], ["x", "22222"]]) == (
        "A         \tBee  \t\n"
        "long-value\t1    \t\n"
        "x         \t22222\t\n")


def output() -> Output:
    rows = [{"topic": "orders", "partition": 3, "transactional_id": None, "brokers": [1, 2]}]
    return Output(kind="hanging", rows=rows, columns=[Column("topic", "TOPIC"), Column("partition", "PART")],
                  kafka_headers=("Topic", "Partition"), kafka_rows=[["orders", "3"]],
                  errors=[{"error": "BROKER_UNREACHABLE", "broker_id": 2}], extra={"as_of_ms": 5})


def test_machine_formats() -> None:
    out = output()
    doc = json.loads(out.render(OutputFormat.json))
    assert doc == {"hanging": [{"topic": "orders", "partition": 3, "transactional_id": None, "brokers": [1, 2]}],
                   "as_of_ms": 5, "errors": [{"error": "BROKER_UNREACHABLE", "broker_id": 2}]}
    assert yaml.safe_load(out.render(OutputFormat.yaml)) == doc
    assert out.render(OutputFormat.csv) == 'topic,partition,transactional_id,brokers\norders,3,,"1,2"\n'
    assert out.render(OutputFormat.tsv) == "topic\tpartition\ttransactional_id\tbrokers\norders\t3\t\t1,2\n"
    assert out.render(OutputFormat.kafka) == "Topic \tPartition\t\norders\t3        \t\n"


def test_plain_table_when_piped_and_empty_message() -> None:
    assert output().render(OutputFormat.table) == "TOPIC   PART\norders  3\n"
    empty = Output(kind="x", rows=[], columns=[Column("a", "A")], empty_message="nothing")
    assert empty.render(OutputFormat.table) == "nothing\n"
    assert empty.render(OutputFormat.csv) == "a\n"


def test_upstream_spellings() -> None:
    now = 1_000_000
    open_p = ProducerState(7, 2, 9, 500, -1, 116)
    idle_p = ProducerState(8, 0, 3, 400, 4, -1)
    assert producer_row(open_p) == ["7", "2", "-1", "9", "500", "116"]
    assert producer_row(idle_p)[-1] == "None"
    tp = TopicPartition("orders", 3)
    d = TransactionDescription("t", 1, "Ongoing", 7, 2, 60000, 400_000, frozenset({tp, TopicPartition("a", 0)}))
    assert describe_row(d, now) == ["1", "t", "7", "2", "Ongoing", "60000", "400000", "600000", "a-0,orders-3"]
    empty = TransactionDescription("t", 1, "Empty", 7, 2, 60000, -1, frozenset())
    assert describe_row(empty, now)[6:] == ["None", "None", ""]
    h = HangingTransaction(tp, ProducerState(7, 2, 9, now - 179_999, -1, 116), HangingReason.NO_TRANSACTIONAL_ID,
                           "", 179_999)
    assert hanging_row(h, now) == ["orders", "3", "7", "2", "-1", "116", str(now - 179_999), "2"]


def test_human_duration() -> None:
    assert [human_duration(ms) for ms in (None, 999, 61_000, 3_600_000 * 25)] == ["", "0s", "1m 1s", "1d 1h"]


def test_progress_bar_is_silent_without_a_terminal(monkeypatch) -> None:
    from kafka_txn_tools.cli.progress import progress_bar

    monkeypatch.setattr("sys.stderr.isatty", lambda: False)
    with progress_bar("scan") as (advance, set_total):
        assert (advance, set_total) == (None, None)
    monkeypatch.setattr("sys.stderr.isatty", lambda: True)
    with progress_bar("scan") as (advance, set_total):
        assert advance is not None and set_total is not None
        set_total(10)
        advance(10)
