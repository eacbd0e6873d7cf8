"""The broker's OAUTHBEARER checks one by one (security/oauthbearer.py): tokens signed here with each kind of
key a JWKS holds, the claims KIP-768's broker validates, key rotation, and RFC 7628 messages. The JWKS is a
file: URL (the provider itself is in tests/e2e/test_auth_oauth.py); time is the injectable clock."""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa, utils

from kafka_txn_broker.clock import ManualClock
from kafka_txn_broker.security.oauthbearer import (
    MIN_REFETCH_MS,
    Jwks,
    OAuthBearerServer,
    OAuthSettings,
    TokenRejected,
    parse_message,
)

NOW_S = 1_800_000_000
ISSUER = "https://idp.test"


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def num(n: int) -> str:
    return b64(n.to_bytes((n.bit_length() + 7) // 8, "big"))


def jwk(kid: str, key: Any) -> dict[str, Any]:
    public = key.public_key()
    if isinstance(public, rsa.RSAPublicKey):
        nums = public.public_numbers()
        return {"kty": "RSA", "kid": kid, "n": num(nums.n), "e": num(nums.e)}
    if isinstance(public, ec.EllipticCurvePublicKey):
        nums = public.public_numbers()
        return {"kty": "EC", "kid": kid, "crv": "P-256", "x": b64(nums.x.to_bytes(32, "big")),
                "y": b64(nums.y.to_bytes(32, "big"))}
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    return {"kty": "OKP", "kid": kid, "crv": "Ed25519", "x": b64(public.public_bytes(Encoding.Raw, PublicFormat.Raw))}


def sign(key: Any, alg: str, kid: str, **claims: Any) -> str:
    body = {"sub": "svc-a", "iss": ISSUER, "aud": "kafka", "iat": NOW_S, "exp": NOW_S + 300, **claims}
    signed = f"{b64(json.dumps({'alg': alg, 'kid': kid}).encode())}.{b64(json.dumps(body).encode())}".encode()
    if alg.startswith("RS"):
        sig = key.sign(signed, padding.PKCS1v15(), hashes.SHA256())
    elif alg.startswith("PS"):
        sig = key.sign(signed, padding.PSS(padding.MGF1(hashes.SHA256()), 32), hashes.SHA256())
    elif alg.startswith("ES"):
        r, s = utils.decode_dss_signature(key.sign(signed, ec.ECDSA(hashes.SHA256())))
        sig = r.to_bytes(32, "big") + s.to_bytes(32, "big")
    else:
        sig = key.sign(signed)
    return f"{signed.decode()}.{b64(sig)}"


def message(token: str) -> bytes:
    return f"n,,\x01auth=Bearer {token}\x01\x01".encode()


@pytest.fixture(scope="module")
def keys() -> dict[str, Any]:
    return {"rsa": rsa.generate_private_key(public_exponent=65537, key_size=2048),
            "ec": ec.generate_private_key(ec.SECP256R1()), "ed": ed25519.Ed25519PrivateKey.generate()}


def setup(tmp_path: Path, keys: dict[str, Any], **settings: Any) -> tuple[OAuthBearerServer, Jwks, ManualClock, Path]:
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps({"keys": [jwk(k, v) for k, v in keys.items()]}))
    clock = ManualClock(NOW_S * 1000)
    values = {"jwks_url": f"file:{path}", "refresh_ms": 3_600_000, "issuer": ISSUER, "audience": ("kafka",),
              "sub_claim": "sub", "skew_s": 30, **settings}
    oauth = OAuthSettings(**values)
    jwks = Jwks(oauth.jwks_url, oauth.refresh_ms, clock)
    return OAuthBearerServer(oauth, jwks, clock), jwks, clock, path


def accept(server: OAuthBearerServer, token: str) -> str | None:
    asyncio.run(server.evaluate(message(token)))
    return server.username


def refusal(server: OAuthBearerServer, token: str) -> str:
    with pytest.raises(TokenRejected) as caught:
        asyncio.run(server.evaluate(message(token)))
    return str(caught.value)


@pytest.mark.parametrize("kind, alg", [("rsa", "RS256"), ("rsa", "PS256"), ("ec", "ES256"), ("ed", "EdDSA")])
def test_every_kind_of_jwks_key_verifies_its_tokens(tmp_path: Path, keys: dict[str, Any], kind: str, alg: str) -> None:
    server, *_ = setup(tmp_path, keys)
    assert accept(server, sign(keys[kind], alg, kind)) == "svc-a"


def test_the_claims_kip_768_checks(tmp_path: Path, keys: dict[str, Any]) -> None:
    server, _, clock, _ = setup(tmp_path, keys)
    rsa_key = keys["rsa"]
    assert "the token's issuer (iss) is 'https://other'" in refusal(server, sign(rsa_key, "RS256", "rsa",
                                                                                 iss="https://other"))
    assert "audience (aud) ['a', 'b'] includes none of" in refusal(server, sign(rsa_key, "RS256", "rsa",
                                                                                aud=["a", "b"]))
    assert accept(server, sign(rsa_key, "RS256", "rsa", aud=["a", "kafka"])) == "svc-a"
    assert "has no 'sub' claim" in refusal(server, sign(rsa_key, "RS256", "rsa", sub=""))
    assert "not valid before" in refusal(server, sign(rsa_key, "RS256", "rsa", nbf=NOW_S + 31))
    assert accept(server, sign(rsa_key, "RS256", "rsa", nbf=NOW_S + 29)) == "svc-a"  # within the clock skew
    token = sign(rsa_key, "RS256", "rsa")
    clock.advance((300 + 29) * 1000)
    assert accept(server, token) == "svc-a"
    clock.advance(1000)
    assert refusal(server, token).startswith("the token expired at 2027-01-15T08:05:00Z (exp), 30 s ago")
    forged = sign(keys["ec"], "ES256", "rsa")  # another key under the RSA key's id
    assert "does not fit key 'rsa'" in refusal(server, forged)


def test_other_claim_names_and_no_issuer_or_audience_check(tmp_path: Path, keys: dict[str, Any]) -> None:
    server, *_ = setup(tmp_path, keys, issuer="", audience=(), sub_claim="client_id")
    assert accept(server, sign(keys["rsa"], "RS256", "rsa", iss="x", aud="y", client_id="app-7")) == "app-7"


def test_an_unknown_key_id_fetches_the_jwks_again_at_most_every_few_seconds(tmp_path: Path,
                                                                             keys: dict[str, Any]) -> None:
    server, _, clock, path = setup(tmp_path, {"rsa": keys["rsa"]})
    assert accept(server, sign(keys["rsa"], "RS256", "rsa")) == "svc-a"
    rotated = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    path.write_text(json.dumps({"keys": [jwk("rsa", keys["rsa"]), jwk("next", rotated)]}))  # the provider rotates
    new = sign(rotated, "RS256", "next")
    assert "key 'next', which is not in the JWKS" in refusal(server, new)  # fetched moments ago: not yet again
    clock.advance(MIN_REFETCH_MS)
    assert accept(server, new) == "svc-a"


@pytest.mark.parametrize("raw, words", [
    (b"n,,\x01auth=Basic abc\x01\x01", "no auth=Bearer"),
    (b"auth=Bearer abc", "not RFC 7628's"),
    (b"n,,\x01auth=Bearer abc\x01\x01", "not a signed JWT"),
    (b"\xff", "not UTF-8"),
])
def test_malformed_messages_and_tokens_are_named(tmp_path: Path, keys: dict[str, Any], raw: bytes,
                                                 words: str) -> None:
    server, *_ = setup(tmp_path, keys)
    with pytest.raises(TokenRejected, match=words):
        asyncio.run(server.evaluate(raw))


def test_the_token_is_taken_from_the_message_with_its_extensions() -> None:
    assert parse_message(b"n,a=svc,\x01host=k1\x01auth=Bearer a.b.c\x01ext=1\x01\x01") == "a.b.c"
