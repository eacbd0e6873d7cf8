"""--profile and how connection options combine (connection/profiles.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_txn_tools.connection.profiles import default_profiles_path, resolve_settings
from kafka_txn_tools.errors import ConfigError

PROFILES = """
default: staging
profiles:
  staging:
    bootstrap_servers: [s1:9092, s2:9092]
  prod:
    bootstrap_servers: p1:9093
    command_config: prod.properties
    properties:
      sasl.mechanism: SCRAM-SHA-512
      sasl.jaas.config: >-
        org.apache.kafka.common.security.scram.ScramLoginModule required
        username="ops" password="${OPS_PW}";
"""


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "profiles.yaml").write_text(PROFILES)
    (tmp_path / "prod.properties").write_text("security.protocol=SASL_SSL\nclient.id=from-file\n")
    (tmp_path / "cli.properties").write_text("bootstrap.servers=f1:9092\nclient.id=cli\n")
    return tmp_path


def resolve(files: Path, flag=None, cfg=None, profile=None, env=None):
    return resolve_settings(flag, files / cfg if cfg else None, profile, env=env or {},
                            profiles_path=files / "profiles.yaml")


def test_profile_with_properties_file_and_env_secret(files: Path) -> None:
    s = resolve(files, profile="prod", env={"OPS_PW": "pw"})
    assert s.bootstrap_servers == "p1:9093"
    assert s.kwargs["security_protocol"] == "SASL_SSL" and s.kwargs["client_id"] == "from-file"
    assert s.kwargs["sasl_plain_password"] == "pw"


def test_precedence(files: Path) -> None:
    assert resolve(files).bootstrap_servers == "s1:9092,s2:9092"  # the default profile
    assert resolve(files, env={"KAFKA_BOOTSTRAP_SERVERS": "e:1"}).bootstrap_servers == "e:1"
    assert resolve(files, cfg="cli.properties").bootstrap_servers == "f1:9092"
    assert resolve(files, flag="x:1", cfg="cli.properties").bootstrap_servers == "x:1"
    s = resolve(files, profile="prod", cfg="cli.properties", env={"OPS_PW": "pw", "KAFKA_BOOTSTRAP_SERVERS": "e:1"})
    assert s.bootstrap_servers == "p1:9093" and s.kwargs["client_id"] == "cli"  # the file overrides the profile


def test_errors(files: Path) -> None:
    with pytest.raises(ConfigError, match="profile 'dev' is not in .* known profiles: prod, staging"):
        resolve(files, profile="dev")
    with pytest.raises(ConfigError, match=r"refers to \$\{OPS_PW\}, which is not set"):
        resolve(files, profile="prod")
    with pytest.raises(ConfigError, match="no cluster to connect to"):
        resolve_settings(None, None, None, env={}, profiles_path=files / "missing.yaml")
    with pytest.raises(ConfigError, match="does not exist"):
        resolve_settings(None, None, "prod", env={}, profiles_path=files / "missing.yaml")


def test_default_path() -> None:
    assert default_profiles_path({"KAFKA_TXN_PROFILES": "/etc/p.yaml"}) == Path("/etc/p.yaml")
    assert default_profiles_path({"XDG_CONFIG_HOME": "/x"}) == Path("/x/kafka-txn/profiles.yaml")
