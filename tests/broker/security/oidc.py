"""The OpenID provider the OAUTHBEARER tests use: panva's oidc-provider (tests/oidc/provider.mjs) under node.

It issues RFC 9068 JWT access tokens by the client credentials grant, signed with an RS256 key it makes
at start, at `<issuer>/token`, with its keys at `<issuer>/jwks`. `scripts/dev.sh setup` installs its npm
packages into tests/oidc/node_modules. One provider per test session (`oidc` in tests/conftest.py).
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import tempfile
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parents[2] / "oidc"
AUDIENCE = "kafka"


@dataclass(frozen=True)
class Client:
    client_id: str
    client_secret: str
    audience: str = AUDIENCE
    scope: str = "kafka"


# kafka-admin is the clusters' super user; kafka-reader gets ACLs; other-app's tokens are for another audience.
CLIENTS = (Client("kafka-admin", "admin-Secret-9q"), Client("kafka-reader", "reader-Secret-4t"),
           Client("other-app", "other-Secret-2w", audience="other-service"))


def missing() -> str | None:
    if shutil.which("node") is None:
        return "node is not installed"
    if not (HERE / "node_modules" / "oidc-provider").is_dir():
        return "the npm packages of tests/oidc are not installed"
    return None


class Provider:
    def __init__(self, clients: tuple[Client, ...] = CLIENTS, ttl_s: int = 300) -> None:
        self.clients = {c.client_id: c for c in clients}
        self._dir = Path(tempfile.mkdtemp(prefix="kafka-txn-oidc-"))
        config = {"port": 0, "ttl": ttl_s, "clients": [c.__dict__ for c in clients]}
        (self._dir / "config.json").write_text(json.dumps(config))
        self._proc: subprocess.Popen[str] | None = None
        self.issuer = ""

    def start(self) -> Provider:
        self._proc = subprocess.Popen(["node", str(HERE / "provider.mjs"), str(self._dir / "config.json")],
                                      cwd=HERE, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=subprocess.DEVNULL, text=True)
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline().strip()
        if not line.startswith("issuer="):
            self.stop()
            raise RuntimeError(f"the OpenID provider did not start (exit code {self._proc.poll()})")
        self.issuer = line.split("=", 1)[1]
        return self

    @property
    def token_endpoint(self) -> str:
        return f"{self.issuer}/token"

    @property
    def jwks_url(self) -> str:
        return f"{self.issuer}/jwks"

    def token(self, client_id: str) -> str:
        """A token for `client_id`, fetched as a client would (client credentials, HTTP Basic)."""
        client = self.clients[client_id]
        basic = base64.b64encode(f"{client.client_id}:{client.client_secret}".encode()).decode()
        request = urllib.request.Request(self.token_endpoint, data=b"grant_type=client_credentials&scope=kafka",
                                         headers={"Authorization": f"Basic {basic}"})
        with urllib.request.urlopen(request, timeout=10) as answer:
            return str(json.loads(answer.read())["access_token"])

    def jwks(self) -> dict[str, Any]:
        with urllib.request.urlopen(self.jwks_url, timeout=10) as answer:
            return dict(json.loads(answer.read()))

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            assert self._proc.stdin is not None
            self._proc.stdin.close()  # the script exits when its stdin closes
            try:
                self._proc.wait(10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(10)
        if self._proc is not None and self._proc.stdout is not None:
            self._proc.stdout.close()
        shutil.rmtree(self._dir, ignore_errors=True)
