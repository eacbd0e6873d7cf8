"""A throwaway MIT Kerberos realm for the tests: its database, krb5.conf and KDC in one temp dir.

`Realm.start()` creates the database (kdb5_util), starts krb5kdc on a free loopback port and points
this process at the realm's krb5.conf (KRB5_CONFIG), a private ticket cache (KRB5CCNAME) and replay
cache directory (KRB5RCACHEDIR): nothing here reads /etc/krb5.conf or the user's tickets, and no
packet leaves 127.0.0.1. `principal(name)` adds a principal with a random key and writes its keytab.

The pytest fixture (`kdc` in tests/conftest.py) starts one realm per session; `stop()` ends the KDC
and restores the environment.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

REALM = "KAFKA.TEST"
BINARIES = ("krb5kdc", "kdb5_util", "kadmin.local", "kinit")
FAKETIME_LIB = Path("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1")
_ENV = ("KRB5_CONFIG", "KRB5_KDC_PROFILE", "KRB5CCNAME", "KRB5RCACHEDIR", "KRB5_CLIENT_KTNAME")


def missing_binaries() -> list[str]:
    return [b for b in BINARIES if shutil.which(b) is None and not Path("/usr/sbin", b).exists()]


def _tool(name: str) -> str:
    return shutil.which(name) or str(Path("/usr/sbin", name))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def krb5_conf(port: int) -> str:
    """The client side: this realm only, its KDC over TCP on loopback, no DNS at all."""
    return (f"[libdefaults]\n  default_realm = {REALM}\n  dns_lookup_kdc = false\n  dns_lookup_realm = false\n"
            "  dns_canonicalize_hostname = false\n  rdns = false\n  udp_preference_limit = 1\n"
            f"[realms]\n  {REALM} = {{\n    kdc = 127.0.0.1:{port}\n  }}\n")


class Realm:
    def __init__(self, root: Path | None = None) -> None:
        self.dir = root or Path(tempfile.mkdtemp(prefix="kafka-txn-krb5-"))
        self.port = free_port()
        self.conf = self.dir / "krb5.conf"
        self.kdc_conf = self.dir / "kdc.conf"
        self.ccache = self.dir / "ccache"
        self._proc: subprocess.Popen[bytes] | None = None
        self._saved: dict[str, str | None] = {}

    def _kdc_conf(self) -> str:
        d = self.dir
        return (f"[kdcdefaults]\n  kdc_ports = {self.port}\n  kdc_tcp_ports = {self.port}\n"
                f"[realms]\n  {REALM} = {{\n    database_name = {d}/principal\n    key_stash_file = {d}/stash\n"
                f"    acl_file = {d}/kadm5.acl\n    kdc_listen = 127.0.0.1:{self.port}\n"
                f"    kdc_tcp_listen = 127.0.0.1:{self.port}\n"
                "    supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal\n"
                f"    max_life = 1h\n  }}\n[logging]\n  kdc = FILE:{d}/kdc.log\n")

    @property
    def env(self) -> dict[str, str]:
        return {"KRB5_CONFIG": str(self.conf), "KRB5_KDC_PROFILE": str(self.kdc_conf),
                "KRB5CCNAME": f"FILE:{self.ccache}", "KRB5RCACHEDIR": str(self.dir)}

    def start(self) -> Realm:
        self.conf.write_text(krb5_conf(self.port))
        self.kdc_conf.write_text(self._kdc_conf())
        (self.dir / "kadm5.acl").write_text("")
        for key, value in self.env.items():
            self._saved[key] = os.environ.get(key)
            os.environ[key] = value
        for key in set(_ENV) - set(self.env):
            self._saved[key] = os.environ.pop(key, None)
        self._run(_tool("kdb5_util"), "create", "-s", "-r", REALM, "-P", "test-master-key", "-W")
        self._proc = self._start_kdc(self.env)
        return self

    def _start_kdc(self, env: dict[str, str], faketime: str | None = None) -> subprocess.Popen[bytes]:
        full = {**os.environ, **env}
        if faketime is not None:
            full |= {"LD_PRELOAD": str(FAKETIME_LIB), "FAKETIME": faketime}
        proc = subprocess.Popen([_tool("krb5kdc"), "-n", "-r", REALM], env=full, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        port = int(env["KRB5_KDC_PORT"]) if "KRB5_KDC_PORT" in env else self.port
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                return proc
            except OSError:
                if proc.poll() is not None:
                    break
                time.sleep(0.02)
        proc.kill()
        raise RuntimeError(f"krb5kdc did not start; see {self.dir / 'kdc.log'}")

    def _run(self, *cmd: str, stdin: str | None = None) -> str:
        done = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=30,
                              env={**os.environ, **self.env})
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd[:2])} failed: {done.stderr.strip() or done.stdout.strip()}")
        return done.stdout

    def kadmin(self, *queries: str) -> None:
        """kadmin.local queries, one per line (kadmin.local's -q takes only one)."""
        self._run(_tool("kadmin.local"), "-r", REALM, stdin="".join(q + "\n" for q in queries))

    def principal(self, name: str, keytab: Path | None = None) -> Path:
        """Add `name` (without the realm) with a random key; its keytab (new keys: the old ones go stale)."""
        path = keytab or self.dir / (name.replace("/", "_") + ".keytab")
        self.kadmin(f"addprinc -randkey {name}", f"ktadd -k {path} {name}")
        return path

    def rekey(self, name: str) -> None:
        """Give `name` a new random key: keytabs written before hold a stale one."""
        self.kadmin(f"cpw -randkey {name}")

    def delete(self, name: str) -> None:
        self.kadmin(f"delprinc -force {name}")

    def kinit(self, name: str, keytab: Path, ccache: Path) -> None:
        self._run(_tool("kinit"), "-k", "-t", str(keytab), "-c", f"FILE:{ccache}", f"{name}@{REALM}")

    def shifted_kdc(self, offset: str) -> tuple[subprocess.Popen[bytes], Path]:
        """A second KDC on the same database whose clock is `offset` off (libfaketime, e.g. "+1h"), and a
        krb5.conf that sends clients to it."""
        port = free_port()
        conf, kdc_conf = self.dir / f"krb5-{port}.conf", self.dir / f"kdc-{port}.conf"
        conf.write_text(krb5_conf(port))
        kdc_conf.write_text(self._kdc_conf().replace(str(self.port), str(port)))
        proc = self._start_kdc({"KRB5_CONFIG": str(conf), "KRB5_KDC_PROFILE": str(kdc_conf),
                                "KRB5_KDC_PORT": str(port)}, faketime=offset)
        return proc, conf

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.send_signal(signal.SIGTERM)
            try:
                self._proc.wait(10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(10)
        for key, value in self._saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        shutil.rmtree(self.dir, ignore_errors=True)
