#!/usr/bin/env python3
"""Writes a benchmark input: N distinct (profileId, originalTransactionId) rows as CSV, from
row FIRST on (the second argument, 0 by default: inputs for runs on one journal that send new rows).

Every transaction id ends in 2..8, so the simulator's deterministic rule restores them all."""
import sys

count = int(sys.argv[1])
first = int(sys.argv[2]) if len(sys.argv) > 2 else 0
out = sys.stdout
out.write("profileId,originalTransactionId\n")
for i in range(first, first + count):
    out.write(f"profile-{i:09d},{2000000000000000 + i * 10 + 2 + (i % 7)}\n")
