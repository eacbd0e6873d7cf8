"""SASL mechanisms server side, checked against kafka-python's independent SCRAM client."""

from __future__ import annotations

import base64

import pytest
from kafka.net.sasl.scram import ScramClient

from kafka_txn_broker.security.sasl import (
    CredentialStore,
    PlainServer,
    SaslFailure,
    SaslServer,
    new_server,
    parse_users,
)
from kafka_txn_broker.security.scram import ScramFailure, decode_saslname, make_credential

USERS = {"alice": "alice-pw", "we,ird=": "p@ss w0rd"}
STORE = CredentialStore(USERS, ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])


def scram_exchange(mechanism: str, user: str, password: str, wire_user: str | None = None) -> bytes:
    """Run a whole exchange; returns the server-final message (raises SaslFailure on refusal)."""
    client = ScramClient(user, password, mechanism)
    if wire_user is not None:
        client.user = wire_user.encode()  # kafka-python does not escape names itself
    server = new_server(mechanism, STORE)
    first = client.first_message()
    client.process_server_first_message(server.evaluate(first))
    final = server.evaluate(client.final_message())
    client.process_server_final_message(final)  # checks the server's signature
    assert server.complete and server.username == user
    return final


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_accepts_the_right_password_and_proves_itself(mechanism: str) -> None:
    assert scram_exchange(mechanism, "alice", "alice-pw").startswith(b"v=")


def test_scram_user_names_are_unescaped() -> None:
    scram_exchange("SCRAM-SHA-512", "we,ird=", "p@ss w0rd", wire_user="we=2Cird=3D")
    assert decode_saslname("a=2Cb=3Dc") == "a,b=c"
    with pytest.raises(ScramFailure):
        decode_saslname("a=41")


@pytest.mark.parametrize("user, password", [("alice", "wrong"), ("nobody", "alice-pw")])
def test_scram_refuses_with_one_message_for_unknown_users_and_wrong_passwords(user: str, password: str) -> None:
    with pytest.raises(SaslFailure) as err:
        scram_exchange("SCRAM-SHA-512", user, password)
    assert str(err.value) == "Authentication failed: invalid credentials for SASL mechanism SCRAM-SHA-512"
    assert password not in str(err.value)


def test_scram_unknown_user_gets_a_stable_made_up_salt() -> None:
    def salt_for(user: str) -> str:
        server = new_server("SCRAM-SHA-256", STORE)
        reply = server.evaluate(f"n,,n={user},r=abc".encode()).decode()
        return dict(kv.split("=", 1) for kv in reply.split(","))["s"]

    assert salt_for("ghost") == salt_for("ghost") != salt_for("alice")


@pytest.mark.parametrize("first, words", [
    (b"p=tls-unique,,n=alice,r=abc", "channel binding is not supported"),
    (b"n,,r=abc,n=alice", "malformed client-first-message"),
    (b"n,,n=alice,r=abc,tokenauth=true", "delegation tokens"),
    (b"n,a=bob,n=alice,r=abc", "authorization id differs"),
    (b"n,,n=alice,r=abc,m=ext", "mandatory SCRAM extensions"),
    (b"\xff\xfe", "not UTF-8"),
])
def test_scram_rejects_malformed_first_messages(first: bytes, words: str) -> None:
    with pytest.raises(SaslFailure, match=words):
        new_server("SCRAM-SHA-256", STORE).evaluate(first)


def test_scram_final_message_must_match_the_exchange() -> None:
    client = ScramClient("alice", "alice-pw", "SCRAM-SHA-256")
    server = new_server("SCRAM-SHA-256", STORE)
    client.process_server_first_message(server.evaluate(client.first_message()))
    good = client.final_message().decode()
    wrong_nonce = good.replace(",r=", ",r=x", 1)
    with pytest.raises(SaslFailure, match="nonce does not match"):
        new_server_after_first(client).evaluate(wrong_nonce.encode())
    bad_cbind = good.replace("c=biws", "c=" + base64.b64encode(b"y,,").decode())
    with pytest.raises(SaslFailure, match="channel binding data"):
        new_server_after_first(client).evaluate(bad_cbind.encode())


def new_server_after_first(client: ScramClient) -> SaslServer:
    """A server that has seen the same client-first-message (its own nonce, so the client's proof is stale)."""
    server = new_server("SCRAM-SHA-256", STORE)
    server.evaluate(b"n,,n=alice,r=" + client.nonce[:32])
    return server


def test_plain() -> None:
    ok = PlainServer(STORE)
    assert ok.evaluate(b"\0alice\0alice-pw") == b"" and ok.complete and ok.username == "alice"
    assert PlainServer(STORE).evaluate(b"alice\0alice\0alice-pw") == b""
    for token, words in [(b"\0alice\0nope", "invalid credentials"), (b"\0ghost\0alice-pw", "invalid credentials"),
                         (b"bob\0alice\0alice-pw", "authorization id differs"), (b"alice-pw", "must be authzid")]:
        with pytest.raises(SaslFailure, match=words) as err:
            PlainServer(STORE).evaluate(token)
        assert b"alice-pw" not in str(err.value).encode() and b"nope" not in str(err.value).encode()


def test_credentials_keep_no_password_and_need_4096_iterations() -> None:
    cred = make_credential("alice-pw", "SCRAM-SHA-512")
    assert cred.iterations == 4096 and len(cred.salt) >= 16
    assert "alice-pw" not in repr(cred) and "alice-pw" not in repr(STORE)
    assert "alice-pw" not in repr(vars(STORE))
    with pytest.raises(ValueError, match="at least 4096"):
        CredentialStore(USERS, ["SCRAM-SHA-256"], iterations=1000)


def test_users_parse_without_echoing_secrets() -> None:
    assert parse_users(["a:b:c", " d : e"]) == {"a": "b:c", "d": " e"}
    with pytest.raises(ValueError) as err:
        parse_users(["ok:1", "no-separator-secret"])
    assert "#2" in str(err.value) and "secret" not in str(err.value)
