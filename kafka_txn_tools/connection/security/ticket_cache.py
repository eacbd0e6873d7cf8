"""A Kerberos ticket cache kept alive for a long-running process: what `kinit` put there is renewed as Kafka's
Java client renews it (its KerberosLogin with useTicketCache=true), until the ticket's renew limit.

- `tgt_times` reads the ticket-granting ticket's start, end and renew-until times from a FILE: cache (MIT's
  format, versions 3 and 4), without the Kerberos library: the library tells how long a ticket has left,
  not when it started or how long it may be renewed.
- `TicketRenewer` runs `kinit -R` on the cache (Kafka's sasl.kerberos.kinit.cmd) once RENEW_AT of the ticket's
  lifetime has passed, while its renew limit allows; `check` says, as a ConnectionFailed naming the cause,
  when the cache holds no ticket that is still valid (expired past its renew limit, never renewable, gone).

Threading: the renewer owns one daemon thread that reads the cache file and runs kinit; `check` and `stop`
are called from any thread (`check` reads the file under the lock the thread holds while kinit rewrites it).
"""

from __future__ import annotations

import datetime as dt
import shutil
import struct
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kafka_txn_tools.errors import ConnectionFailed

RENEW_AT = 0.8  # of the ticket's lifetime: Kafka's sasl.kerberos.ticket.renew.window.factor
LOGIN_FAILED = "LOGIN_FAILED"  # the monitor's cause for a credential it cannot get or renew


@dataclass(frozen=True)
class TicketTimes:
    """Seconds since the epoch; `renew_till` 0 for a ticket that is not renewable."""

    start: int
    end: int
    renew_till: int


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def take(self, fmt: str) -> tuple[int, ...]:
        values = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return values

    def counted(self) -> bytes:
        (size,) = self.take(">I")
        value = self.data[self.pos:self.pos + size]
        self.pos += size
        return value

    def principal(self) -> str:
        _, count = self.take(">II")
        realm = self.counted().decode("utf-8", "replace")
        parts = [self.counted().decode("utf-8", "replace") for _ in range(count)]
        return f"{'/'.join(parts)}@{realm}"


def cache_path(name: str | None) -> Path | None:
    """The file of a FILE: cache name (or a bare path); None for MEMORY:, KEYRING: and other kinds."""
    if not name:
        return None
    kind, sep, rest = name.partition(":")
    if not sep:
        return Path(name)
    return Path(rest) if kind == "FILE" else None


def tgt_times(path: Path) -> TicketTimes | None:
    """The cache's ticket-granting ticket (krbtgt/REALM@REALM, the last one stored: a renewal appends), or None
    when the file is missing, unreadable or holds none."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if len(data) < 2 or data[0] != 5 or data[1] not in (3, 4):
        return None
    reader = _Reader(data)
    reader.pos = 2
    try:
        if data[1] == 4:
            (header_size,) = reader.take(">H")
            reader.pos += header_size
        reader.principal()  # the cache's default principal
        found = None
        while reader.pos < len(data):
            reader.principal()
            server = reader.principal()
            reader.take(">HH" if data[1] == 3 else ">H")  # the key's type (twice in version 3)
            reader.counted()  # the key
            _, start, end, renew_till = reader.take(">IIII")
            reader.take(">BI")  # is_skey, flags
            for _ in range(reader.take(">I")[0]):  # addresses
                reader.take(">H")
                reader.counted()
            for _ in range(reader.take(">I")[0]):  # authorization data
                reader.take(">H")
                reader.counted()
            reader.counted()  # the ticket
            reader.counted()  # the second ticket
            name, _, realm = server.rpartition("@")
            if name == f"krbtgt/{realm}":
                found = TicketTimes(start, end, renew_till)
        return found
    except struct.error:
        return None


def _iso(seconds: float) -> str:
    return dt.datetime.fromtimestamp(seconds, dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


class TicketRenewer:
    """Renews the TGT of a FILE: ticket cache (module docstring). `start` once; `stop` ends the thread."""

    def __init__(self, cache: str, path: Path, principal: str | None, kinit: str = "kinit",
                 now: Callable[[], float] = time.time) -> None:
        self.cache = cache
        self.path = path
        self.principal = principal
        self.kinit = kinit
        self._now = now
        self._stop = threading.Event()
        self._writing = threading.Lock()  # held while kinit rewrites the cache: `check` never reads it half-written
        self._thread: threading.Thread | None = None
        self.problem: str | None = None  # why the last renewal failed, if it did
        self.renewals = 0

    def due(self, times: TicketTimes, now: float) -> bool:
        """Renew now: RENEW_AT of its lifetime has passed, it is still valid, and renewing extends it (its renew
        limit is later than its end)."""
        return (times.start + RENEW_AT * (times.end - times.start) <= now < times.end < times.renew_till)

    def check(self) -> None:
        """ConnectionFailed naming why, when the cache holds no valid ticket; nothing otherwise."""
        with self._writing:
            times = tgt_times(self.path)
        kinit = f"run kinit {self.principal or '<principal>'}"
        now = self._now()
        if times is None:
            raise ConnectionFailed(f"no Kerberos ticket in {self.cache}", kinit, cause=LOGIN_FAILED)
        if now >= times.end:
            if times.renew_till == 0:
                why = "it was not renewable"
            elif times.renew_till <= now:
                why = f"its renew limit was {_iso(times.renew_till)}"
            else:
                why = f"it was not renewed in time{f' ({self.problem})' if self.problem else ''}"
            raise ConnectionFailed(f"the Kerberos ticket in {self.cache} expired at {_iso(times.end)} and can no "
                                   f"longer be renewed ({why})", kinit, cause=LOGIN_FAILED)

    def renew_once(self) -> bool:
        """`kinit -R` if due; True if it ran and succeeded."""
        times = tgt_times(self.path)
        if times is None or not self.due(times, self._now()):
            return False
        kinit = shutil.which(self.kinit) or self.kinit
        try:
            with self._writing:
                done = subprocess.run([kinit, "-R", "-c", self.cache], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired) as exc:
            self.problem = f"{self.kinit} -R failed: {exc}"
            return False
        if done.returncode != 0:
            self.problem = f"{self.kinit} -R failed: {done.stderr.strip() or done.returncode}"
            return False
        self.problem = None
        self.renewals += 1
        return True

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="kerberos-ticket-renewer", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            failed = not self.renew_once() and self.problem is not None
            self._stop.wait(self._pause(failed))

    def _pause(self, failed: bool) -> float:
        """Until the next look at the cache: a twentieth of the ticket's lifetime, within 0.2-5 s (so a short
        ticket is renewed within its last fifth, and a long one costs a file read every few seconds)."""
        times = tgt_times(self.path)
        lifetime = (times.end - times.start) if times else 20.0
        return max(0.2, min(5.0, lifetime / 20, 1.0 if failed else 5.0))
