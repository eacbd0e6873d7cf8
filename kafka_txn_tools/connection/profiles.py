"""Named clusters (`--profile NAME`) and how every connection option combines.

The profiles file is YAML, by default ~/.config/kafka-txn/profiles.yaml ($XDG_CONFIG_HOME honoured),
or the path in $KAFKA_TXN_PROFILES:

    default: staging            # used when no --profile / --bootstrap-server is given (optional)
    profiles:
      staging:
        bootstrap_servers: kafka-1.staging:9092,kafka-2.staging:9092
      prod:
        bootstrap_servers: kafka-1.prod:9093
        command_config: prod-admin.properties     # relative to this file
        properties:                               # Java client properties, inline
          security.protocol: SASL_SSL
          sasl.mechanism: SCRAM-SHA-512
          sasl.jaas.config: >-
            org.apache.kafka.common.security.scram.ScramLoginModule required
            username="ops" password="${KAFKA_OPS_PASSWORD}";

`${VAR}` in a property value is read from the environment, so secrets need not live in the file.

Precedence, most specific first: --bootstrap-server, the profile, $KAFKA_BOOTSTRAP_SERVERS, then
bootstrap.servers in the --command-config file. Properties: the profile's, then --command-config on top.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafka_txn_tools.connection.config import ClientSettings, load_properties, settings_from_properties
from kafka_txn_tools.errors import ConfigError

ENV_PROFILES = "KAFKA_TXN_PROFILES"
ENV_BOOTSTRAP = "KAFKA_BOOTSTRAP_SERVERS"


def default_profiles_path(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    if env.get(ENV_PROFILES):
        return Path(env[ENV_PROFILES]).expanduser()
    base = Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else Path.home() / ".config"
    return base / "kafka-txn" / "profiles.yaml"


@dataclass(frozen=True)
class Profile:
    name: str
    bootstrap_servers: str | None
    command_config: Path | None
    properties: dict[str, str]


@dataclass(frozen=True)
class ProfilesFile:
    path: Path
    profiles: dict[str, Profile]
    default: str | None

    def get(self, name: str) -> Profile:
        if name not in self.profiles:
            known = ", ".join(sorted(self.profiles)) or "none"
            raise ConfigError(f"profile {name!r} is not in {self.path}", f"known profiles: {known}")
        return self.profiles[name]


def load_profiles(path: Path) -> ProfilesFile | None:
    """Read the profiles file; None when it does not exist."""
    import yaml  # lazy: only commands that connect need it

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"cannot read profiles file {path}: {exc}") from None
    data = data or {}
    if not isinstance(data, Mapping):
        raise ConfigError(f"profiles file {path} must be a YAML map with a `profiles:` section")
    raw = data.get("profiles", {})
    if not isinstance(raw, Mapping):
        raise ConfigError(f"`profiles:` in {path} must map profile names to settings")
    profiles = {str(name): _profile(str(name), body, path) for name, body in raw.items()}
    default = data.get("default")
    if default is not None and str(default) not in profiles:
        raise ConfigError(f"default profile {default!r} in {path} is not defined under `profiles:`")
    return ProfilesFile(path, profiles, str(default) if default is not None else None)


_KNOWN = {"bootstrap_servers", "bootstrap-servers", "command_config", "command-config", "properties"}


def _profile(name: str, body: Any, path: Path) -> Profile:
    if not isinstance(body, Mapping):
        raise ConfigError(f"profile {name!r} in {path} must be a map (bootstrap_servers, command_config, properties)")
    unknown = set(map(str, body)) - _KNOWN
    if unknown:
        raise ConfigError(f"profile {name!r} in {path} has unknown keys {sorted(unknown)}",
                          "use bootstrap_servers, command_config and properties")
    servers = body.get("bootstrap_servers", body.get("bootstrap-servers"))
    if isinstance(servers, list):
        servers = ",".join(map(str, servers))
    cfg = body.get("command_config", body.get("command-config"))
    cfg_path = (path.parent / Path(str(cfg)).expanduser()) if cfg else None
    props_raw = body.get("properties") or {}
    if not isinstance(props_raw, Mapping):
        raise ConfigError(f"`properties` of profile {name!r} in {path} must be a map of Java client properties")
    # ${VAR} is expanded only for the profile in use: other profiles' secrets need not be set.
    props = {str(k): str(v) for k, v in props_raw.items()}
    return Profile(name, str(servers) if servers else None, cfg_path, props)


_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def _expand(value: str, what: str, env: Mapping[str, str]) -> str:
    def sub(m: re.Match[str]) -> str:
        if m.group(1) not in env:
            raise ConfigError(f"{what} refers to ${{{m.group(1)}}}, which is not set in the environment")
        return env[m.group(1)]

    return _VAR.sub(sub, value)


def resolve_settings(
    bootstrap_server: str | None,
    command_config: Path | None,
    profile: str | None,
    env: Mapping[str, str] | None = None,
    profiles_path: Path | None = None,
) -> ClientSettings:
    """Combine --bootstrap-server, --command-config, --profile and the environment."""
    env = os.environ if env is None else env
    file_props = load_properties(command_config) if command_config is not None else {}
    file_servers = file_props.pop("bootstrap.servers", None)
    chosen = _choose_profile(profile, profiles_path or default_profiles_path(env), env,
                             explicit_bootstrap=bool(bootstrap_server or file_servers))
    props: dict[str, str] = {}
    source = "--command-config"
    if chosen is not None:
        if chosen.command_config is not None:
            props.update(load_properties(chosen.command_config))
        props.update({k: _expand(v, f"profile {chosen.name!r} property {k}", env)
                      for k, v in chosen.properties.items()})
        source = f"profile {chosen.name!r}"
    if command_config is not None:
        props.update(file_props)
        source = str(command_config) if chosen is None else f"{source} + {command_config}"
    props.pop("bootstrap.servers", None)
    settings = settings_from_properties(props, source)
    settings.bootstrap_servers = (
        bootstrap_server
        or (chosen.bootstrap_servers if chosen else None)
        or env.get(ENV_BOOTSTRAP)
        or file_servers
    )
    if chosen is not None:
        settings.profile = chosen.name
    if not settings.bootstrap_servers:
        raise ConfigError(
            "no cluster to connect to",
            f"pass --bootstrap-server host:port, set ${ENV_BOOTSTRAP}, or pick a --profile",
        )
    return settings


def _choose_profile(name: str | None, path: Path, env: Mapping[str, str], explicit_bootstrap: bool) -> Profile | None:
    if name is not None:
        pf = load_profiles(path)
        if pf is None:
            raise ConfigError(f"--profile {name} given but {path} does not exist",
                              f"create it (see `kafka-txn --help`) or set ${ENV_PROFILES}")
        return pf.get(name)
    if explicit_bootstrap or env.get(ENV_BOOTSTRAP):
        return None
    pf = load_profiles(path)
    return pf.get(pf.default) if pf is not None and pf.default else None
