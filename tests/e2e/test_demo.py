"""The README's main job runs end to end and clears the incident it stages."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_txn_tools.demo import run


@pytest.mark.needs("java")  # the demo's sweep step runs Spark
def test_demo_finds_aborts_and_sweeps(tmp_path: Path) -> None:
    lines: list[str] = []
    assert run(lines.append, tmp_path) is True, "\n".join(lines)
    text = "\n".join(lines)
    assert "a read_committed consumer got 0 of them: it is stalled" in text
    assert "the consumer resumed and read 10 committed records" in text
    assert "transaction-not-ongoing" in text
    assert "find-hanging again: 0 hanging" in text
    assert (tmp_path / "sweep" / "report.html").stat().st_size > 1000
    assert (tmp_path / "sweep" / "abort-plan.yaml").exists()
