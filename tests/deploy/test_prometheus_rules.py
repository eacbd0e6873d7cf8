"""deploy/prometheus: the shipped rule files pass `promtool check rules`, their unit tests (`promtool test
rules`, the *.test.yml beside this file) pass, every alert of each file has a unit test, and every alert
carries a runbook naming the kafka-txn command to run."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "deploy" / "prometheus"
HERE = Path(__file__).resolve().parent
RULE_FILES = sorted(RULES.glob("*-rules.yml"))  # kafka-txn-scrape.yml is a scrape config

pytestmark = pytest.mark.needs("promtool")


def alerts(path: Path) -> list[dict]:
    return [rule for group in yaml.safe_load(path.read_text())["groups"] for rule in group["rules"]]


def test_both_rule_files_are_shipped() -> None:
    assert [p.name for p in RULE_FILES] == ["kafka-jmx-txn-rules.yml", "kafka-txn-rules.yml"]


@pytest.mark.parametrize("rules", RULE_FILES, ids=lambda p: p.name)
def test_rules_are_valid_and_their_unit_tests_pass(rules: Path) -> None:
    check = subprocess.run(["promtool", "check", "rules", str(rules)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    tests = HERE / rules.name.replace(".yml", ".test.yml")
    done = subprocess.run(["promtool", "test", "rules", tests.name], cwd=HERE, capture_output=True, text=True)
    assert done.returncode == 0 and "SUCCESS" in done.stdout, done.stdout + done.stderr


@pytest.mark.parametrize("rules", RULE_FILES, ids=lambda p: p.name)
def test_every_alert_is_unit_tested_firing_and_silent(rules: Path) -> None:
    tests = yaml.safe_load((HERE / rules.name.replace(".yml", ".test.yml")).read_text())
    assert tests["rule_files"] == [f"../../deploy/prometheus/{rules.name}"]
    cases = [case for test in tests["tests"] for case in test["alert_rule_test"]]
    for rule in alerts(rules):
        mine = [c for c in cases if c["alertname"] == rule["alert"]]
        assert any(c["exp_alerts"] for c in mine), f"{rule['alert']} is never expected to fire"
        assert any(not c["exp_alerts"] for c in mine), f"{rule['alert']} is never expected to stay silent"


@pytest.mark.parametrize("rules", RULE_FILES, ids=lambda p: p.name)
def test_every_alert_has_a_runbook_naming_a_kafka_txn_command(rules: Path) -> None:
    for rule in alerts(rules):
        annotations = rule["annotations"]
        assert {"summary", "description", "runbook"} <= set(annotations), rule["alert"]
        assert "`kafka-txn " in annotations["runbook"], rule["alert"]
        assert rule["labels"]["severity"] in ("critical", "warning")


def test_the_hanging_transaction_alert_waits_five_minutes() -> None:
    rule = next(r for r in alerts(RULES / "kafka-txn-rules.yml") if r["alert"] == "KafkaTxnHangingTransaction")
    assert rule["for"] == "5m"
