"""The value of `sasl.jaas.config` (`<LoginModule> required key="value" ...;`), read as Java's JAAS parser
reads it: SASL PLAIN and SCRAM take their credentials from it, GSSAPI (kerberos.py) its keytab and principal,
OAUTHBEARER (oauth.py) its client credentials. Its text usually holds a password: never echoed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kafka_txn_tools.errors import ConfigError

_JAAS = re.compile(
    r"^\s*(?P<module>[\w.$]+)\s+(?P<flag>required|requisite|sufficient|optional)(?P<opts>.*?);?\s*$", re.S)
_JAAS_OPT = re.compile(r'\s*([\w.]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s;"]+))')


@dataclass(frozen=True)
class JaasConfig:
    login_module: str
    options: dict[str, str]

    def __repr__(self) -> str:
        return f"JaasConfig(login_module={self.login_module!r}, options={sorted(self.options)!r})"


def parse_jaas(text: str) -> JaasConfig:
    """Read `<LoginModule> required key="value" ...;` (the value of sasl.jaas.config)."""
    m = _JAAS.match(text)
    if not m:
        # Never echo the text: it usually contains the password.
        raise ConfigError(
            "sasl.jaas.config could not be parsed",
            'expected e.g. org.apache.kafka.common.security.scram.ScramLoginModule required '
            'username="alice" password="...";',
        )
    options: dict[str, str] = {}
    pos = 0
    opts = m.group("opts")
    while pos < len(opts):
        if not opts[pos:].strip():
            break
        om = _JAAS_OPT.match(opts, pos)
        if not om:
            raise ConfigError(
                "sasl.jaas.config has an option that is not key=value or key=\"value\"",
                "quote values that contain spaces or semicolons",
            )
        quoted, bare = om.group(2), om.group(3)
        options[om.group(1)] = re.sub(r"\\(.)", r"\1", quoted) if quoted is not None else bare
        pos = om.end()
    return JaasConfig(m.group("module"), options)
