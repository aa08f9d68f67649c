#!/usr/bin/env python3
"""Writes the scale benchmark's input: N distinct pairs with UUID profile ids, as CSV.

The ids are derived from the row number (no randomness), so each call writes the same pairs. Every
transaction id ends in 2, 4, 6 or 8, which the simulator's rule restores as an active annual plan."""
import sys


def profile_id(i):
    # A version-4-shaped UUID from a 128-bit mix of i: distinct for every i, stable across calls.
    x = ((i + 1) * 0x9E3779B97F4A7C15F39CC0605CEDC835) % (1 << 128)
    x ^= x >> 61
    h = f"{x:032x}"
    return f"{h[0:8]}-{h[8:12]}-4{h[13:16]}-8{h[17:20]}-{h[20:32]}"


def transaction_id(i):
    return 2000000000000000 + i * 10 + 2 * (1 + i % 4)


count = int(sys.argv[1])
out = sys.stdout
lines = ["profileId,originalTransactionId\n"]
for i in range(count):
    lines.append(f"{profile_id(i)},{transaction_id(i)}\n")
    if len(lines) >= 100000:
        out.write("".join(lines))
        lines = []
out.write("".join(lines))
