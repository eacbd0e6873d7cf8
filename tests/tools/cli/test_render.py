"""Output formats (cli/render.py) and upstream's value spellings (cli/upstream/format.py)."""

from __future__ import annotations

import json

import yaml

from kafka_txn_tools.cli.options import OutputFormat
from kafka_txn_tools.cli.render import Column, Output, human_duration, upstream_table, wrap_lines
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


def test_human_duration_is_the_one_duration_spelling_and_a_dash_for_none() -> None:
    assert [human_duration(ms) for ms in (None, 999, 61_000, 3_600_000 * 25, 900_000)] == [
        "-", "999ms", "1m 1s", "1d 1h", "15m"]
    # Integer.MAX_VALUE ms (a 2PC transaction's timeout) reads the same in every command.
    assert human_duration(2**31 - 1) == "24d 20h"


def test_timestamps_are_iso_utc_with_their_age_and_none_is_a_dash() -> None:
    from kafka_txn_tools.cli.render import timestamp

    cell = timestamp(1_700_000_000_000 + 3 * 3_600_000 + 5 * 60_000)
    assert cell(1_700_000_000_000) == "2023-11-14T22:13:20Z (3h 5m ago)"
    assert cell(-1) == "-" and cell(None) == "-"


def test_an_empty_cell_is_a_dash_in_every_column_and_empty_stays_empty_in_csv() -> None:
    out = Output(kind="x", rows=[{"a": None, "b": "", "c": []}],
                 columns=[Column("a", "A"), Column("b", "B", lambda v: v), Column("c", "C")])
    assert out.render(OutputFormat.table) == "A  B  C\n-  -  -\n"
    assert out.render(OutputFormat.csv) == "a,b,c\n,,\n"


def test_the_one_wording_of_an_empty_result() -> None:
    from kafka_txn_tools.cli.render import nothing_found

    assert nothing_found("transactions") == "no transactions found"
    assert nothing_found("hanging transactions", "9 partition replicas read") == (
        "no hanging transactions found (9 partition replicas read)")


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


# ---- tables on a narrow terminal -----------------------------------------------------------------------
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from kafka_txn_tools.cli.render import fit_columns  # noqa: E402

WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-._", min_size=1, max_size=30)


@settings(max_examples=150, deadline=None)
@given(values=st.lists(st.lists(WORD, min_size=5, max_size=5), min_size=1, max_size=6),
       width=st.integers(min_value=30, max_value=140), drops=st.permutations([0, 1, 2, 3, 4]))
def test_a_table_never_breaks_a_cell_whatever_the_width(values: list[list[str]], width: int,
                                                        drops: list[int]) -> None:
    columns = [Column(f"c{i}", f"COL {i}", drop=d) for i, d in enumerate(drops)]
    rows = [{f"c{i}": v for i, v in enumerate(row)} for row in values]
    out = Output(kind="x", rows=rows, columns=columns)
    text = out.render(OutputFormat.table, width)
    lines = text.splitlines()
    shown = [c for c in columns if c.title not in out.hidden]
    if fit_columns(rows, columns, width)[1]:
        assert all(len(line) <= width for line in lines), text
        assert lines[0].split("  ")[0] == shown[0].title
    else:  # one record per block: a line per column, nothing left out
        assert out.hidden == [] and len(lines) == len(rows) * (len(columns) + 1) - 1
    for row in rows:  # every value of every shown column is on one line, whole
        for c in shown:
            assert any(row[c.key] in line.split() for line in lines), (row[c.key], text)
    assert {c.title for c in columns if c.drop == 0} <= {c.title for c in shown}  # essentials are never left out


def test_least_important_columns_go_first_and_wide_keeps_all() -> None:
    columns = [Column("topic", "TOPIC"), Column("tid", "TRANSACTIONAL ID", drop=2), Column("age", "AGE", drop=1),
               Column("reason", "REASON")]
    row = {"topic": "payments-ledger-eu-west-1", "tid": "ledger-writer-7f3a9c", "age": "31m 2s",
           "reason": "transaction-not-ongoing"}
    shown, fits = fit_columns([row], columns, 60)
    assert fits and [c.title for c in shown] == ["TOPIC", "AGE", "REASON"]
    shown, fits = fit_columns([row], columns, 30)
    assert not fits  # the essential ones alone do not fit: one record per block
    blocks = Output(kind="x", rows=[row], columns=columns).render(OutputFormat.table, 30)
    assert blocks.splitlines()[0] == "TOPIC             payments-ledger-eu-west-1"
    wide = Output(kind="x", rows=[row], columns=columns).render(OutputFormat.table, None)
    assert "TRANSACTIONAL ID" in wide and "ledger-writer-7f3a9c" in wide


def test_no_color_and_pipes_get_no_escape_codes(monkeypatch) -> None:
    import io

    from kafka_txn_tools.cli.terminal import bold

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    assert bold("X", Tty()) == "\033[1mX\033[0m"
    assert bold("X", io.StringIO()) == "X"  # a pipe
    monkeypatch.setenv("NO_COLOR", "1")
    assert bold("X", Tty()) == "X"


def test_prose_after_a_table_wraps_at_spaces_within_the_width_and_keeps_long_words_whole() -> None:
    text = "t-0 producer 7: the coordinator forgot it\n  do: kafka-txn abort --topic t --partition 0 --start-offset 5"
    wrapped = wrap_lines(text, 30)
    assert max(map(len, wrapped.splitlines())) <= 30
    assert wrapped.split() == text.split()  # the same words, none broken
    assert wrapped.splitlines()[3].startswith("    ")  # continuing "  do:" lines are indented under it
    assert wrap_lines(text, None) == text and wrap_lines("x" * 40, 30) == "x" * 40


# ---- prose on a narrow terminal: wrapped at word boundaries, never dropped, commands never split ------------------
from kafka_txn_tools.cli.render import render_blocks, wrap_words  # noqa: E402


def test_wrap_words_breaks_between_words_and_keeps_a_command_in_backticks_whole() -> None:
    text = "refused: the coordinator still holds 'app' as live (`kafka-txn force-terminate -t app --force`); wait"
    lines = wrap_words(text, 30)
    assert "(`kafka-txn force-terminate -t app --force`);" in lines
    assert " ".join(lines) == text
    assert all(len(line) <= 30 for line in lines if "`" not in line)
    assert wrap_words("one\ntwo three", None) == ["one", "two three"]


def test_a_last_prose_column_is_wrapped_in_its_cell_before_anything_is_left_out() -> None:
    detail = ("the open transaction of producer 10 at offset 100 on orders-1 is not the one named: producer epoch 3 "
              "(the partition has 4)")
    columns = [Column("topic", "TOPIC"), Column("partition", "PART"), Column("result", "RESULT"),
               Column("hw", "HW", drop=1), Column("message", "DETAIL", wrap=True)]
    out = Output(kind="x", rows=[{"topic": "orders", "partition": 1, "result": "refused", "hw": 180,
                                  "message": detail}], columns=columns)
    text = out.render(OutputFormat.table, 80)
    lines = text.splitlines()
    assert out.hidden == [] and all(len(line) <= 80 for line in lines), text
    assert lines[0].split() == ["TOPIC", "PART", "RESULT", "HW", "DETAIL"]
    start = lines[0].index("DETAIL")
    assert all(line[:start].strip() == "" for line in lines[2:])  # continuation lines stay in their column
    assert " ".join(line[start:] for line in lines[1:]) == detail  # every word, in order, none split


def test_prose_that_cannot_share_the_width_goes_to_blocks_wrapped_under_its_value() -> None:
    columns = [Column("topic", "TOPIC"), Column("message", "DETAIL", wrap=True)]
    row = {"topic": "a-topic-with-a-name-as-long-as-they-come-in-production", "message": "word " * 30}
    text = render_blocks([row], columns, 40)
    lines = text.splitlines()
    assert lines[0].startswith("TOPIC   a-topic") and all(len(line) <= 40 for line in lines[1:])
    assert all(line.startswith(" " * 8) for line in lines[2:])
    assert " ".join(line[8:] for line in lines[1:]).split() == ["word"] * 30


def test_stderr_messages_wrap_at_word_boundaries_only_on_a_terminal(monkeypatch, capsys) -> None:
    from kafka_txn_tools.cli.errors import say

    message = "error: " + " ".join(["refused"] * 20) + " `kafka-txn abort --topic orders --partition 1 --force`"
    monkeypatch.setenv("COLUMNS", "40")
    say(message)
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) > 1 and lines[-1] == "  `kafka-txn abort --topic orders --partition 1 --force`"
    assert all(len(line) <= 40 for line in lines[:-1])
    monkeypatch.delenv("COLUMNS")
    say(message)  # piped (pytest's capture is no terminal): one line, as logs want it
    assert capsys.readouterr().err == message + "\n"


def test_prose_after_a_table_wraps_between_words_and_never_splits_a_command() -> None:
    footer = ("orders-1 producer 7: coordinator holds 'app' as CompleteAbort; no marker is coming\n"
              "  do: `kafka-txn abort --topic payments-ledger-eu-west-1 --partition 1 --start-offset 116` (its marker)")
    text = wrap_lines(footer, 60)
    lines = text.splitlines()
    assert "    `kafka-txn abort --topic payments-ledger-eu-west-1 --partition 1 --start-offset 116`" in lines
    assert all(len(line) <= 60 for line in lines if "`" not in line)
    assert " ".join(text.split()) == " ".join(footer.split())
    assert wrap_lines(footer, None) == footer
