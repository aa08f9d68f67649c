#!/usr/bin/env python3
"""What each process of a pacing run was accepted and refused, step by step (issue 23).

    python3 bench/pacing_trace.py [--step SECONDS] [--until SECONDS] JOURNAL...

Reads `attempts` from each journal (one per process, as `bench/pacing.sh` leaves them with
`KEEP=DIR`) and prints, from the first request of any of them, one line per step: each process's
requests accepted (as a rate a second) and refused (a count), and the accepted total. The seconds
a start or a shard's finish costs show as rows well under the limit; the 429s' times come first.
"""
import argparse
import collections
import os
import signal
import sqlite3


def attempts(path):
    if not os.path.isfile(path):
        raise SystemExit(f"{path}: no such journal (bench/pacing.sh keeps them with KEEP=DIR)")
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    rows = db.execute("SELECT started_at, http_status FROM attempts ORDER BY started_at").fetchall()
    db.close()
    return rows


def main():
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends the output quietly
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--step", type=float, default=1.0, help="seconds a line (default 1)")
    parser.add_argument("--until", type=float, help="stop after this many seconds")
    parser.add_argument("journals", nargs="+")
    arguments = parser.parse_args()
    processes = [attempts(path) for path in arguments.journals]
    if not any(processes):
        raise SystemExit("no attempts in these journals")
    first = min(rows[0][0] for rows in processes if rows)
    last = max(rows[-1][0] for rows in processes if rows)
    accepted = sum(1 for rows in processes for _, status in rows if status == 200)
    refused = sum(1 for rows in processes for _, status in rows if status == 429)
    span = (last - first) / 1000
    print(f"{len(processes)} process(es), {span:.2f} s from the first request to the last: "
          f"{accepted} accepted ({accepted / max(span, 0.001):.1f}/s), {refused} answered 429 "
          f"({100 * refused / max(accepted + refused, 1):.2f}%)")
    for index, rows in enumerate(processes):
        times = " ".join(f"{(at - first) / 1000:.2f}" for at, status in rows if status == 429)
        print(f"#{index} 429s at: {times or 'none'}")
    steps = int(span / arguments.step) + 1
    if arguments.until is not None:
        steps = min(steps, int(arguments.until / arguments.step) + 1)
    counts = [collections.Counter() for _ in processes]
    for index, rows in enumerate(processes):
        for at, status in rows:
            counts[index][(int((at - first) / 1000 / arguments.step), status)] += 1
    for step in range(steps):
        cells, total = [], 0
        for count in counts:
            ok, bad = count[(step, 200)], count[(step, 429)]
            total += ok
            cells.append(f"{ok / arguments.step:5.0f} {bad:3d}")
        print(f"{step * arguments.step:7.2f} | " + " | ".join(cells) + f" | {total / arguments.step:5.0f}")


if __name__ == "__main__":
    main()
