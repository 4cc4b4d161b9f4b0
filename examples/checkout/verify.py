#!/usr/bin/env python3
"""How a checkout backend checks a pushonce admission token, in Python with PyJWT
(docs/operations.md "Checking admission at the checkout"). Debian: python3-jwt and
python3-cryptography.

    PUSHONCE_URL=https://waiting.example.com python3 verify.py TOKEN
    PUSHONCE_URL=... PUSHONCE_API_KEY=... python3 verify.py TOKEN   # also asks the state

Offline: the signature against the gateway's JWKS (PyJWKClient caches it), the issuer, exp.
With an API key: GET /api/admission/ID as well. Prints one JSON object; exit 0 when
admitted, 1 when not.
"""
import json
import os
import sys
import urllib.error
import urllib.request

import jwt

base = os.environ.get("PUSHONCE_URL", "http://127.0.0.1:8080")
issuer = os.environ.get("PUSHONCE_ADMISSION_ISSUER", "pushonce")
api_key = os.environ.get("PUSHONCE_API_KEY")
jwks = jwt.PyJWKClient(base + "/.well-known/jwks.json")


def answer(out, ok):
    print(json.dumps(out))
    sys.exit(0 if ok else 1)


def state_of(claims):
    """The admission's state, "unknown" when pushonce has no record of it, or "mismatch"
    when its record names another user or resource than the token (a record is bound to
    the assignment it was made for; a token never stands for someone else's)."""
    req = urllib.request.Request(base + "/api/admission/" + claims["jti"],
                                 headers={"Authorization": "Bearer " + api_key})
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            record = json.load(r)
    except urllib.error.HTTPError as e:
        if e.code == 404:
            return "unknown"
        raise
    if record.get("user") != claims["sub"] or record.get("resource") != claims.get("resource"):
        return "mismatch"
    return record["state"]


token = sys.argv[1] if len(sys.argv) > 1 else ""
try:
    key = jwks.get_signing_key_from_jwt(token).key
    claims = jwt.decode(token, key, algorithms=["ES256"], issuer=issuer,
                        options={"require": ["exp", "iat", "sub", "jti"]})
except jwt.ExpiredSignatureError as e:
    answer({"valid": False, "error": "expired", "message": str(e)}, False)
except (jwt.PyJWTError, ValueError) as e:
    answer({"valid": False, "error": "invalid", "message": str(e)}, False)

out = {"valid": True, "user": claims["sub"], "queue": claims["queue"],
       "resource": claims["resource"], "id": claims["jti"]}
if api_key:
    out["state"] = state_of(claims)
    # Assigned or accepted: the user may go on. Released, expired, unknown, mismatch: refuse.
    out["valid"] = out["state"] in ("assigned", "accepted")
answer(out, out["valid"])
