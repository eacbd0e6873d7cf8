"""SASL/GSSAPI (Kerberos) from Java client properties, through kafka-python's GSSAPI mechanism.

    sasl.mechanism=GSSAPI
    sasl.kerberos.service.name=kafka
    sasl.jaas.config=com.sun.security.auth.module.Krb5LoginModule required \\
        useKeyTab=true keyTab="/etc/security/keytabs/admin.keytab" principal="admin@EXAMPLE.COM";

kafka-python's mechanism (the `gssapi` package over the system's Kerberos library) uses the default
credentials, so reading the properties points the process's Kerberos environment at them:
- with `keyTab`: KRB5_CLIENT_KTNAME names the keytab and KRB5CCNAME a process-private memory cache, so
  the user's own ticket cache is never touched and the library gets (and renews) tickets from the keytab
  by itself; `KerberosLogin.login` logs the named principal in explicitly;
- without: KRB5CCNAME is `ticketCache` if given, else the cache of an earlier `kinit` is used.
Then the service ticket for the first bootstrap broker (`<service>/<host>`) is fetched, so each failure is
named at once, in one round trip to the KDC: a keytab without the principal, or with an old key; a
principal or a service the KDC does not know; clock skew; no ticket or an expired one; no KDC.

A long-running process (the monitor) calls `renew` before each scan: with a keytab, the Kerberos library
gets a new ticket from it once half of the current one's lifetime has passed (MIT's refresh; kafka-python's
re-authentications use it); with a ticket cache, a TicketRenewer (ticket_cache.py) renews it with `kinit -R`
until its renew limit. Either way, a ticket that has expired and cannot be renewed is a ConnectionFailed
naming why (the keytab gone, the renew limit passed), cause LOGIN_FAILED.
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafka_txn_tools.connection.security.ticket_cache import LOGIN_FAILED, TicketRenewer, cache_path
from kafka_txn_tools.errors import ConfigError, ConnectionFailed

if TYPE_CHECKING:
    from collections.abc import MutableMapping

    from kafka_txn_tools.connection.security.jaas import JaasConfig

# MIT krb5 error codes (com_err table base -1765328384, read unsigned) as GSS minor statuses.
_BASE = 2529638912
_CLIENT_UNKNOWN, _SERVICE_UNKNOWN, _PREAUTH_FAILED, _EXPIRED, _SKEW = (_BASE + 6, _BASE + 7, _BASE + 24,
                                                                        _BASE + 32, _BASE + 37)
_INTEGRITY = 2529638943  # "Decrypt integrity check failed": the keytab's key is not the KDC's
_LOGINS = itertools.count(1)


def keytab_principals(path: Path) -> list[str]:
    """The principals a keytab holds keys for (MIT's keytab format, versions 0x501 and 0x502)."""
    data = path.read_bytes()
    if len(data) < 2 or data[0] != 5 or data[1] not in (1, 2):
        raise ConfigError(f"keyTab {path} is not a Kerberos keytab")
    version, pos, found = data[1], 2, []
    while pos + 4 <= len(data):
        (size,) = struct.unpack_from(">i", data, pos)
        pos += 4
        if size <= 0:
            pos += -size  # a hole left by a deleted entry
            continue
        entry, pos = data[pos:pos + size], pos + size
        (count,) = struct.unpack_from(">H", entry, 0)
        count -= 1 if version == 1 else 0  # version 1 counts the realm as a component
        at, strings = 2, []
        for _ in range(count + 1):
            (length,) = struct.unpack_from(">H", entry, at)
            strings.append(entry[at + 2:at + 2 + length].decode("utf-8", "replace"))
            at += 2 + length
        name = f"{'/'.join(strings[1:])}@{strings[0]}"
        if name not in found:
            found.append(name)
    return found


@dataclass
class KerberosLogin:
    service: str
    keytab: Path | None = None
    principal: str | None = None  # from the JAAS line; else the keytab's first, or the ticket cache's
    ticket_cache: str | None = None
    source: str = "--command-config"
    memory_cache: str = ""  # the keytab's tickets (MEMORY:...)
    logged_in: str | None = None  # the client principal, once logged in
    renewer: TicketRenewer | None = None  # a ticket cache's, started by the first `renew`

    def login(self, host: str, environ: MutableMapping[str, str] | None = None) -> str:
        """Get tickets for talking to `<service>/<host>`; the client principal's name, or a one-line error."""
        env = os.environ if environ is None else environ
        gssapi = _module(self.source)
        self.point_environment(env)
        credentials = self._from_keytab(gssapi, host) if self.keytab is not None else self._from_cache(gssapi, env)
        name = _display(gssapi, credentials.name)
        target = gssapi.Name(f"{self.service}@{host}", gssapi.NameType.hostbased_service)
        try:
            gssapi.raw.init_sec_context(target, creds=credentials, mech=gssapi.MechType.kerberos)
        except gssapi.raw.GSSError as exc:
            raise self._refused(exc, name, host) from None
        self.logged_in = name
        return name

    def renew(self, environ: MutableMapping[str, str] | None = None) -> None:
        """Keep the login's ticket valid for a long-running process (module docstring); ConnectionFailed
        naming why when it has expired and cannot be renewed. Called from one thread at a time."""
        gssapi = _module(self.source)
        if self.keytab is not None:
            self._renew_from_keytab(gssapi)
            return
        env = os.environ if environ is None else environ
        cache = self.ticket_cache or env.get("KRB5CCNAME") or _default_cache()
        path = cache_path(cache)
        if path is None:  # a cache kinit -R cannot be pointed at by path: ask the library how long it has left
            self._from_cache(gssapi, env)
            return
        if self.renewer is None:
            self.renewer = TicketRenewer(cache if ":" in cache else f"FILE:{cache}", path,
                                         self.principal or self.logged_in)
            self.renewer.start()
        self.renewer.check()

    def _renew_from_keytab(self, gssapi: Any) -> None:
        assert self.keytab is not None
        principal = self.logged_in or self.principal or ""
        try:
            gssapi.Credentials(name=gssapi.Name(principal, gssapi.NameType.kerberos_principal), usage="initiate",
                               store={"client_keytab": str(self.keytab), "ccache": self.memory_cache})
        except gssapi.raw.GSSError as exc:
            if not os.path.isfile(self.keytab):
                raise self._keytab_gone() from None
            raise ConnectionFailed(f"the Kerberos ticket of {principal} could not be renewed from keyTab "
                                   f"{self.keytab}: {_gss_text(exc)}", cause=LOGIN_FAILED) from None

    def _keytab_gone(self) -> ConnectionFailed:
        return ConnectionFailed(f"the Kerberos ticket of {self.logged_in or self.principal} has expired and keyTab "
                                f"{self.keytab} cannot renew it: the file no longer exists",
                                "restore the keytab named in sasl.jaas.config", cause=LOGIN_FAILED)

    def explain_failure(self) -> None:
        """After a (re-)authentication failed on kafka-python's thread: raise why the ticket could not be renewed,
        if that is why (a keytab gone, a ticket past its renew limit); nothing otherwise."""
        if self.keytab is not None and not os.path.isfile(self.keytab):
            raise self._keytab_gone()
        self.renew()

    def close(self) -> None:
        if self.renewer is not None:
            self.renewer.stop()

    def point_environment(self, env: MutableMapping[str, str]) -> None:
        """KRB5_CLIENT_KTNAME and KRB5CCNAME for kafka-python's mechanism, which takes the default credentials."""
        if self.keytab is not None:
            if not self.memory_cache:
                self.memory_cache = f"MEMORY:kafka-txn-{os.getpid()}-{next(_LOGINS)}"  # never another's tickets
            env["KRB5_CLIENT_KTNAME"] = str(self.keytab)
            env["KRB5CCNAME"] = self.memory_cache
        elif self.ticket_cache:
            env["KRB5CCNAME"] = self.ticket_cache

    def _from_keytab(self, gssapi: Any, host: str) -> Any:
        assert self.keytab is not None
        held = keytab_principals(self.keytab)
        principal = self.principal or (held[0] if held else None)
        if principal is None or not any(_same(principal, h) for h in held):
            raise ConfigError(f"keyTab {self.keytab} holds no key for {principal or 'any principal'} (it holds: "
                              f"{', '.join(held) or 'nothing'})", "check keyTab and principal in sasl.jaas.config")
        try:
            return gssapi.Credentials(name=gssapi.Name(principal, gssapi.NameType.kerberos_principal),
                                      usage="initiate",
                                      store={"client_keytab": str(self.keytab), "ccache": self.memory_cache})
        except gssapi.raw.GSSError as exc:  # the initial tickets are fetched here, from the keytab's key
            raise self._refused(exc, principal, host) from None

    def _from_cache(self, gssapi: Any, env: MutableMapping[str, str]) -> Any:
        cache = env.get("KRB5CCNAME") or "the default ticket cache"
        kinit = f"run kinit {self.principal or '<principal>'}, or set keyTab and principal in sasl.jaas.config"
        try:
            credentials = gssapi.Credentials(usage="initiate")
            lifetime = credentials.lifetime
        except gssapi.raw.GSSError as exc:
            if getattr(exc, "min_code", 0) == _EXPIRED or "expired" in str(exc).lower():
                raise ConnectionFailed(f"the Kerberos ticket in {cache} has expired", kinit,
                                       cause=LOGIN_FAILED) from None
            raise ConnectionFailed(f"no Kerberos ticket in {cache} ({_minor_text(exc)})", kinit,
                                   cause=LOGIN_FAILED) from None
        if lifetime is not None and lifetime <= 0:
            raise ConnectionFailed(f"the Kerberos ticket in {cache} has expired", kinit, cause=LOGIN_FAILED)
        name = _display(gssapi, credentials.name)
        if self.principal and not _same(self.principal, name):
            raise ConfigError(f"the ticket cache {cache} holds tickets of {name}, not of principal {self.principal} "
                              "in sasl.jaas.config", f"run kinit {self.principal}")
        return credentials

    def _refused(self, exc: Any, principal: str, host: str) -> ConnectionFailed:
        code, text = getattr(exc, "min_code", 0), _minor_text(exc)
        service = f"{self.service}/{host}"
        if code == _CLIENT_UNKNOWN or "Client" in text and "not found" in text:
            return ConnectionFailed(f"the KDC does not know principal {principal}",
                                    "check principal in sasl.jaas.config (and its realm)")
        if code == _SERVICE_UNKNOWN or "Server" in text and "not found" in text:
            return ConnectionFailed(f"the KDC has no service principal {service} (sasl.kerberos.service.name="
                                    f"{self.service}, broker host {host})",
                                    "set sasl.kerberos.service.name to the first part of the brokers' principal"
                                    + _by_name(host))
        if code in (_PREAUTH_FAILED, _INTEGRITY) or "Preauthentication failed" in text:
            where = f"keyTab {self.keytab}" if self.keytab else "the ticket cache"
            return ConnectionFailed(f"the KDC refused the key of {principal} in {where}: the keytab is out of date "
                                    "(the principal has a newer key)", "export the principal's current key to the "
                                    "keytab (kadmin ktadd), or use the keytab the KDC administrator gave")
        if code == _SKEW or "skew" in text.lower():
            return ConnectionFailed("clock skew too great between this machine and the KDC",
                                    "synchronise the clocks (NTP)")
        if "Cannot contact any KDC" in text or "Cannot find KDC" in text:
            return ConnectionFailed(f"no KDC of {principal.rpartition('@')[2]} could be reached ({text})",
                                    "check the realm's kdc entries in krb5.conf (or KRB5_CONFIG)")
        return ConnectionFailed(f"Kerberos refused {principal} a ticket for {service}: {text}")


def _default_cache() -> str:
    """MIT's default ticket cache when KRB5CCNAME is unset (krb5.conf's default_ccache_name aside), if it exists."""
    path = Path(f"/tmp/krb5cc_{os.getuid()}")  # noqa: S108 - the library's own default, read only
    return f"FILE:{path}" if path.is_file() else ""


def login_failure(exc: Exception) -> ConnectionFailed:
    """A Kerberos error met while a connection (re-)authenticated, on kafka-python's thread."""
    return ConnectionFailed(f"Kerberos could not authenticate this client to the cluster: {_gss_text(exc)}",
                            "check the ticket cache (klist) or the keyTab in sasl.jaas.config", cause=LOGIN_FAILED)


def _same(a: str, b: str) -> bool:
    """Principals equal, a missing realm in `a` matching any."""
    return a == b or ("@" not in a and b.rpartition("@")[0] == a)


def _by_name(host: str) -> str:
    """For a broker given by its IP address: Kafka's Java client asks for the service of the name the address
    resolves back to, so the same --bootstrap-server can work there and not here; this tool takes it as given."""
    import ipaddress
    import socket

    try:
        ipaddress.ip_address(host)
        name = socket.gethostbyaddr(host)[0]
    except (ValueError, OSError):
        return ""
    return f"; or give --bootstrap-server by the name {host} resolves to ({name}), as Kafka's Java clients take it"


def _display(gssapi: Any, name: Any) -> str:
    return bytes(gssapi.raw.display_name(name).name).decode("utf-8")


def _gss_text(exc: Any) -> str:
    """The minor status's words, or the major's when the minor says nothing ("Success")."""
    minor = _minor_text(exc)
    text = str(exc)
    if "Major (" not in text or (minor and minor != "Success" and not minor.startswith("Unknown")):
        return minor
    return text.split("Major (", 1)[1].split("): ", 1)[-1].split(", Minor (", 1)[0].strip()


def _minor_text(exc: Any) -> str:
    """The Kerberos library's own words for a GSSError (its minor status), without the GSS boilerplate."""
    text = str(exc)
    return text.split("Minor (", 1)[1].split("): ", 1)[-1].strip() if "Minor (" in text else text


def _module(source: str) -> Any:
    try:
        import gssapi
        import gssapi.raw
    except ImportError:
        raise ConfigError(f"sasl.mechanism=GSSAPI in {source} needs the Python package gssapi",
                          "pip install 'kafka-txn-tools[kerberos]' (it builds against the Kerberos libraries, e.g. "
                          "Debian's libkrb5-dev)") from None
    return gssapi


def apply_gssapi(take: Any, jaas: JaasConfig | None, kw: dict[str, Any], source: str,
                 environ: MutableMapping[str, str] | None = None) -> KerberosLogin:
    """kafka-python's GSSAPI settings and Kerberos environment (`environ`, default os.environ), and the login
    to run before connecting."""
    if importlib.util.find_spec("gssapi") is None:
        _module(source)
    service = take("sasl.kerberos.service.name") or "kafka"
    kw["sasl_kerberos_service_name"] = service
    options = jaas.options if jaas is not None else {}
    keytab = options.get("keyTab")
    if keytab:
        if options.get("useKeyTab", "true").lower() != "true":
            raise ConfigError(f"sasl.jaas.config in {source} names keyTab but sets useKeyTab={options['useKeyTab']}")
        if not os.path.isfile(keytab):
            raise ConfigError(f"keyTab {keytab} in sasl.jaas.config of {source} does not exist")
    login = KerberosLogin(service, Path(keytab) if keytab else None, options.get("principal") or None,
                          options.get("ticketCache") or None, source)
    login.point_environment(os.environ if environ is None else environ)
    return login
