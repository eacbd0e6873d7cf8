"""Real servers around `kafka-txn monitor` for the end-to-end tests: the monitor itself as a child process,
Debian's Prometheus with a generated config, and headless Chromium reading the status page."""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import yaml

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "deploy" / "prometheus" / "kafka-txn-rules.yml"
DASHBOARD = ROOT / "deploy" / "grafana" / "kafka-txn-dashboard.json"
T = TypeVar("T")


def wait_for(what: str, check: Callable[[], T | None], timeout: float = 60.0, every: float = 0.25) -> T:
    """Poll `check` until it returns something truthy (bounded); fail naming `what`."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout:g}s waiting for {what} (last: {last!r})")


def http_get(url: str, timeout: float = 10.0, context: ssl.SSLContext | None = None,
             auth: tuple[str, str] | None = None) -> tuple[int, str]:
    request = urllib.request.Request(url)  # noqa: S310 (a local test server)
    if auth is not None:
        request.add_header("Authorization", "Basic " + base64.b64encode(":".join(auth).encode()).decode())
    try:
        with urllib.request.urlopen(request, timeout=timeout, context=context) as response:  # noqa: S310
            return response.status, response.read().decode("utf-8")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode("utf-8")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class MonitorProcess:
    """`kafka-txn monitor` in a child process on a free port (it prints the address it serves)."""

    def __init__(self, bootstrap: str, history: Path, *extra: str, interval: str = "1s",
                 env: dict[str, str] | None = None) -> None:
        self.cmd = [sys.executable, "-m", "kafka_txn_tools", "monitor", "-b", bootstrap, "--listen", "127.0.0.1:0",
                    "--interval", interval, "--history", str(history), "--timeout", "5s", *extra]
        self.env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
        self.proc: subprocess.Popen[str] | None = None
        self.url = ""
        self.stderr: list[str] = []
        self.context: ssl.SSLContext | None = None  # how get() connects over https
        self.auth: tuple[str, str] | None = None  # and the basic auth it sends

    def __enter__(self) -> MonitorProcess:
        self.proc = subprocess.Popen(self.cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                     env=self.env)
        assert self.proc.stderr is not None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = self.proc.stderr.readline()
            self.stderr.append(line)
            if "serving http" in line:
                self.url = line.split("serving ", 1)[1].split("/ ", 1)[0]
                return self
            if not line and self.proc.poll() is not None:
                break
        raise RuntimeError(f"the monitor did not start: {''.join(self.stderr)}")

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def get(self, path: str) -> tuple[int, str]:
        return http_get(self.url + path, context=self.context, auth=self.auth)

    def findings(self) -> dict[str, Any] | None:
        status, body = self.get("/api/findings")
        return json.loads(body) if status == 200 else None

    def terminate(self, timeout: float = 30.0) -> tuple[int, str]:
        """SIGTERM; the exit code and everything it wrote to stderr."""
        assert self.proc is not None and self.proc.stderr is not None
        self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(timeout)
        return code, "".join(self.stderr) + self.proc.stderr.read()


def short_for(rules: Path, out: Path, duration: str = "1s") -> Path:
    """A copy of a shipped rule file with every `for:` shortened (the shipped file keeps its minutes)."""
    doc = yaml.safe_load(rules.read_text())
    for group in doc["groups"]:
        for rule in group["rules"]:
            if "for" in rule:
                rule["for"] = duration
    out.write_text(yaml.safe_dump(doc, sort_keys=False))
    return out


class PrometheusProcess:
    """Debian's `prometheus` with a generated config: 1 s scrapes and rule evaluations, a temp TSDB, a free
    port; scraping `targets` as job kafka-txn-monitor (the job the shipped rules name)."""

    def __init__(self, workdir: Path, targets: Sequence[str], rule_files: Sequence[Path],
                 scrape_configs: Sequence[dict[str, Any]] | None = None) -> None:
        self.workdir = workdir
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        jobs = list(scrape_configs) if scrape_configs is not None else [
            {"job_name": "kafka-txn-monitor", "static_configs": [{"targets": list(targets)}]}]
        config = {"global": {"scrape_interval": "1s", "scrape_timeout": "1s", "evaluation_interval": "1s"},
                  "rule_files": [str(p) for p in rule_files], "scrape_configs": jobs}
        self.config = workdir / "prometheus.yml"
        self.config.write_text(yaml.safe_dump(config))
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> PrometheusProcess:
        binary = shutil.which("prometheus")
        assert binary is not None
        self.proc = subprocess.Popen(
            [binary, f"--config.file={self.config}", f"--storage.tsdb.path={self.workdir / 'tsdb'}",
             f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn"],
            stdout=subprocess.DEVNULL, stderr=open(self.workdir / "prometheus.log", "wb"))  # noqa: SIM115
        wait_for("Prometheus to be ready", lambda: self._ready(), timeout=60)
        return self

    def _ready(self) -> bool:
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise RuntimeError(f"prometheus exited: {(self.workdir / 'prometheus.log').read_text()}")
        try:
            return http_get(self.url + "/-/ready", timeout=2)[0] == 200
        except OSError:
            return False

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)

    def api(self, path: str, **params: str) -> Any:
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        status, body = http_get(f"{self.url}/api/v1/{path}{query}")
        doc = json.loads(body)
        assert status == 200 and doc["status"] == "success", body
        return doc["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        data = self.api("query", query=expr)
        return data["result"] if isinstance(data["result"], list) else [data["result"]]

    def alerts(self, name: str, state: str = "firing") -> list[dict[str, Any]]:
        return [a for a in self.api("alerts")["alerts"] if a["labels"]["alertname"] == name and a["state"] == state]

    def active(self, name: str) -> list[dict[str, Any]]:
        return [a for a in self.api("alerts")["alerts"] if a["labels"]["alertname"] == name]


def dashboard_queries() -> list[str]:
    """Every PromQL expression of the shipped Grafana dashboard, with its variables as Grafana would fill
    them for "all monitors" and a rate interval, and its variable queries as the series they read."""
    doc = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in doc["panels"] for t in p.get("targets", [])]
    for var in doc["templating"]["list"]:
        if var.get("type") == "query":
            definition = var["definition"]  # label_values(metric, label)
            metric = definition[definition.index("(") + 1:definition.index(",")].strip()
            exprs.append(metric)
    return [e.replace("$__rate_interval", "1m").replace('"$instance"', '".*"') for e in exprs]


def chromium_dom(url: str, profile: Path, timeout: float = 60.0, *flags: str) -> str:
    """The status page's DOM as headless Chromium renders it."""
    binary = shutil.which("chromium")
    assert binary is not None
    done = subprocess.run(
        [binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
         *flags, "--dump-dom", url], capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout
