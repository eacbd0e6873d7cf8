"""The sweep's report shows every kind the sweep found, each with its commands, readable at a laptop's width:
checked in headless Chromium at 1280 px, with every <details> closed and then open."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from html import escape
from pathlib import Path
from typing import Any

import pytest

from kafka_txn_tools.admin.advice import Invocation
from kafka_txn_tools.spark.job import run_sweep

# The measure, added to a copy of the report (the report itself runs no script): the page's scroll width with
# every <details> closed, then open, written into the DOM that --dump-dom prints.
MEASURE = """<script>
const root = document.documentElement, widths = [root.scrollWidth];
document.querySelectorAll('details').forEach(d => d.open = true);
widths.push(root.scrollWidth);
document.body.setAttribute('data-widths', JSON.stringify({closed: widths[0], open: widths[1], view: root.clientWidth,
  details: document.querySelectorAll('details').length}));
</script>"""
WIDTH = 1280
# A long --command-config path: command lines wrap inside their block, never widen the page.
CONFIG = "/etc/kafka/clusters/production-eu-west-1/clients/kafka-txn-operations/admin-client.properties"


def chromium(*args: str, profile: Path) -> subprocess.CompletedProcess[str]:
    binary = shutil.which("chromium")
    if binary is None:
        pytest.fail("chromium is not installed: run `bash scripts/dev.sh setup`")
    done = subprocess.run(
        [binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
         f"--user-data-dir={profile}", f"--window-size={WIDTH},900", *args],
        capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done


def widths(report: Path, tmp_path: Path) -> dict[str, int]:
    measured = tmp_path / "measured.html"
    measured.write_text(report.read_text().replace("</body>", MEASURE + "</body>"))
    dom = chromium("--dump-dom", measured.as_uri(), profile=tmp_path / "chromium").stdout
    found = re.search(r'data-widths="([^"]+)"', dom)
    assert found is not None, dom[-2000:]
    return json.loads(found.group(1).replace("&quot;", '"'))


def sweep(spark: Any, generated: Any, out: Path) -> Any:
    inputs, _ = generated["dump"]
    return run_sweep(inputs, out, include_late=True, spark=spark,
                     invocation=Invocation("kafka-1.prod.example.com:9093,kafka-2.prod.example.com:9093", None, CONFIG))


def test_every_kind_found_is_in_the_report_with_its_commands_and_fits_1280px(spark, generated, tmp_path):
    result = sweep(spark, generated, tmp_path / "out")
    summary = result.summary
    # The data set holds every kind: hanging, late but live, stuck at the coordinator, replica divergence.
    assert summary["hanging"] and summary["late_live"] and summary["stuck"] and summary["divergences"]
    measured = widths(tmp_path / "out" / "report.html", tmp_path)
    assert measured["view"] == WIDTH and measured["details"] >= len(result.rows)
    assert measured["closed"] <= WIDTH and measured["open"] <= WIDTH, measured  # no horizontal overflow
    html = (tmp_path / "out" / "report.html").read_text()
    assert all(r["commands"] for r in result.hanging)  # a stuck one may have none: its action says what to do
    for row in [*result.rows, *result.stuck]:
        for command in row["commands"]:
            assert f"<pre><code>{escape(command)}</code></pre>" in html  # whole, as printed
            assert command.endswith(f"--command-config {CONFIG}")
    for s in result.stuck:
        assert escape(s["transactional_id"]) in html and escape(s["action"]) in html
    for plan_line in summary["apply_plan"]:
        assert f"<pre><code>{escape(plan_line)}</code></pre>" in html
    assert html.count('<tr class="todo">') == len(result.rows) + len(result.stuck)
    for card in ("stuck at their coordinator", "late but live", "replica divergences", "unverified"):
        assert f"</b>{card}</a>" in html


def test_the_old_fifteen_column_table_would_fail_the_measure(tmp_path):
    # The measure can fail: a report with a table as wide as the old one (15 columns of long values) overflows.
    wide = "".join(f"<td>{'x' * 30}-{i}</td>" for i in range(15))
    page = tmp_path / "wide.html"
    page.write_text(f"<!DOCTYPE html><html><body><table><tr>{wide}</tr></table></body></html>")
    assert widths(page, tmp_path)["closed"] > WIDTH


def test_without_a_known_cluster_the_report_shows_no_command_and_says_how_to_apply_the_plan():
    from kafka_txn_tools.spark.report import render_report

    row = {"topic": "nightly", "partition": 0, "producer_id": 7, "producer_epoch": 0, "start_offset": 0,
           "age_ms": 1_800_000, "verdict": "hanging", "reason": "transaction-not-ongoing", "action": "abort it",
           "commands": []}
    summary = {"hanging": 1, "cluster": {"reaches_cluster": False, "options": []}, "apply_plan": []}
    html = render_report(summary, [row], {})
    assert "<pre>" not in html and "kafka-txn abort" not in html
    assert html.count("No command is shown: these inputs do not record the cluster") == 1
    assert "commands connect with</dt><dd>nothing: no cluster is known" in html
