"""SASL/GSSAPI (Kerberos) from Java client properties, through kafka-python's GSSAPI mechanism.

    sasl.mechanism=GSSAPI
    sasl.kerberos.service.name=kafka
    sasl.jaas.config=com.sun.security.auth.module.Krb5LoginModule required \\
        useKeyTab=true keyTab="/etc/security/keytabs/admin.keytab" principal="admin@EXAMPLE.COM";

kafka-python uses the Python `gssapi` package, which takes its credentials from the Kerberos
library's environment rather than from options: `keyTab` becomes KRB5_CLIENT_KTNAME (MIT Kerberos
acquires client credentials from that keytab by itself) and `ticketCache` KRB5CCNAME; without them
the default ticket cache (`kinit`) is used, as with useTicketCache=true. The keytab's principal is
the one used, so `principal` must be in it.
"""

from __future__ import annotations

import importlib.util
import os
from typing import TYPE_CHECKING, Any

from kafka_txn_tools.admin.errors import ConfigError

if TYPE_CHECKING:
    from kafka_txn_tools.admin.config import JaasConfig


def apply_gssapi(take: Any, jaas: JaasConfig | None, kw: dict[str, Any], source: str,
                 environ: dict[str, str] | None = None) -> None:
    env = os.environ if environ is None else environ
    if importlib.util.find_spec("gssapi") is None:
        raise ConfigError(f"sasl.mechanism=GSSAPI in {source} needs the Python package gssapi",
                          "pip install gssapi (it builds against the Kerberos libraries, e.g. Debian's "
                          "libkrb5-dev)")
    kw["sasl_kerberos_service_name"] = take("sasl.kerberos.service.name") or "kafka"
    options = jaas.options if jaas is not None else {}
    keytab = options.get("keyTab")
    if keytab:
        if options.get("useKeyTab", "true").lower() != "true":
            raise ConfigError(f"sasl.jaas.config in {source} names keyTab but sets useKeyTab={options['useKeyTab']}")
        if not os.path.isfile(keytab):
            raise ConfigError(f"keyTab {keytab} in sasl.jaas.config of {source} does not exist")
        env["KRB5_CLIENT_KTNAME"] = keytab
    if options.get("ticketCache"):
        env["KRB5CCNAME"] = options["ticketCache"]
