#!/usr/bin/env python3
"""Writes an N-row input in one of the export forms the reader takes, for memory measurements
of each reading path (see bench/README.md):

    python3 bench/make_export.py KIND N > FILE

KIND: semicolon-1252 (Excel's European CSV: Windows-1252, ';', CRLF, "4,99 €" prices),
utf16 (Excel's Unicode Text: UTF-16LE with a byte-order mark, tabs, CRLF), json-array
(pretty-printed, as jq writes it), jws (profileId,signedTransaction with real-shaped JWS whose
ids differ), receipts (profileId,receipt cycling through the fixture receipts).
Ids end in 2..8, so the simulator restores every row."""
import base64
import json
import os
import sys

kind, count = sys.argv[1], int(sys.argv[2])
out = sys.stdout.buffer
root = os.path.join(os.path.dirname(__file__), "..")


def pair(i):
    return f"profile-{i:09d}", str(2000000000000000 + i * 10 + 2 + (i % 7))


def fixture(name):
    with open(os.path.join(root, "Tests/Fixtures/purchases", name), "rb") as handle:
        return handle.read().strip()


if kind == "semicolon-1252":
    out.write("profileId;originalTransactionId;Preis;Währung\r\n".encode("cp1252"))
    for i in range(count):
        profile, tid = pair(i)
        out.write(f'{profile};{tid};"4,99 €";EUR\r\n'.encode("cp1252"))
elif kind == "utf16":
    lines = ["profileId\toriginalTransactionId\tnote\r\n"]
    out.write(b"\xff\xfe")
    out.write(lines[0].encode("utf-16-le"))
    for i in range(count):
        profile, tid = pair(i)
        out.write(f"{profile}\t{tid}\tZoë 🎉\r\n".encode("utf-16-le"))
elif kind == "json-array":
    out.write(b"[\n")
    for i in range(count):
        profile, tid = pair(i)
        tail = ",\n" if i + 1 < count else "\n"
        out.write(f'  {{\n    "profileId": "{profile}",\n    "originalTransactionId": "{tid}"\n  }}{tail}'.encode())
    out.write(b"]\n")
elif kind == "jws":
    header, payload, signature = fixture("jws-production.jws").split(b".")
    decoded = json.loads(base64.urlsafe_b64decode(payload + b"=" * (-len(payload) % 4)))
    out.write(b"profileId,signedTransaction\n")
    for i in range(count):
        profile, tid = pair(i)
        decoded["originalTransactionId"] = tid
        body = base64.urlsafe_b64encode(json.dumps(decoded, separators=(",", ":")).encode()).rstrip(b"=")
        out.write(profile.encode() + b"," + header + b"." + body + b"." + signature + b"\n")
elif kind == "receipts":
    receipts = [fixture(name) for name in ("receipt-two-purchases.b64", "receipt-der.b64", "receipt-other-bundle.b64")]
    out.write(b"profileId,receipt\n")
    for i in range(count):
        profile, _ = pair(i)
        out.write(profile.encode() + b"," + receipts[i % 3] + b"\n")
else:
    sys.exit(f"unknown kind {kind}")
