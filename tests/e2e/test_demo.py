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
    # Step 8: the sweep's commands carry the cluster the dump was taken from (none would be refused as printed,
    # `no cluster to connect to`), and the plan is applied with the very line the sweep printed.
    bootstrap = next(line.split("=", 1)[1] for line in lines if line.strip().startswith("BOOTSTRAP="))
    step8 = text[text.index("8. The nightly sweep"):text.index("9. find-hanging again")]
    printed = [line.strip() for line in step8.splitlines() if line.strip().startswith("kafka-txn ")]
    assert printed and all(line.endswith(f"--bootstrap-server {bootstrap}") for line in printed), step8
    plan = tmp_path / "sweep" / "abort-plan.yaml"
    assert f"kafka-txn abort --plan {plan} --bootstrap-server {bootstrap}" in printed
    assert f"$ kafka-txn abort --plan {plan} --bootstrap-server {bootstrap} --yes" in step8
