#!/usr/bin/env python3
"""Compares two outputs of the pacing model's scenario table, scenario by scenario, over seeds.

Each input is what `BOTSI_PACING_CASES=1 BOTSI_PACING_SEEDS=1,2,3,4,5,6,7,8 swift test
--skip-build --filter PacingExplore/cases` printed (before and after a change). For every scenario
whose figures moved it prints both sides' means over the seeds: utilization (or the job's share of
the room left, beside a live client), the job's 429s, the live client's 429s, the lowest 5 s
share, and how many seeds missed a target or fell below the floor. Means over eight seeds, not
one seed's line: a scenario swings by 0.05 of the limit from seed to seed, and changes that moved
seeds 1-2 have come out as noise over 1-8 (docs/pacing.md).

    python3 bench/pacing_compare.py BEFORE.txt AFTER.txt [--all]
"""
import re
import sys
from collections import defaultdict

LINE = re.compile(r"^(?P<name>[^|]+?) \| seed (?P<seed>\d+) \| utilization (?P<util>[\d.]+) \| 429s (?P<refused>[\d.]+)%")


def load(path):
    """Scenario name -> list of per-seed figures, and the file's closing count line."""
    scenarios, total = defaultdict(list), ""
    with open(path, encoding="utf-8") as text:
        for line in text:
            if "scenario-seeds miss" in line:
                total = line.strip()
            match = LINE.match(line)
            if not match:
                continue
            live = re.search(r"live 429s ([\d.]+)%", line)
            share = re.search(r"shares ([\d.]+)", line)
            scenarios[match["name"].strip()].append({
                "util": float(match["util"]),
                "refused": float(match["refused"]),
                "live": float(live.group(1)) if live else None,
                "share": float(share.group(1)) if share else None,
                "missed": line.rstrip().endswith("missed") or "| missed |" in line,
                "below": "BELOW THE FLOOR" in line,
            })
    return scenarios, total


def summary(seeds):
    def mean(key):
        return sum(seed[key] for seed in seeds) / len(seeds)

    words = f"{len(seeds)} seeds: utilization {mean('util'):.3f}, 429s {mean('refused'):.2f}%"
    if seeds[0]["live"] is not None:
        words += f", live 429s {mean('live'):.2f}%"
    if seeds[0]["share"] is not None:
        words += f", lowest share {mean('share'):.2f}"
    missed = sum(seed["missed"] for seed in seeds)
    below = sum(seed["below"] for seed in seeds)
    return words + f"; {missed} missed, {below} below the floor"


def main(argv):
    paths = [arg for arg in argv if not arg.startswith("--")]
    if len(paths) != 2:
        sys.exit("usage: python3 bench/pacing_compare.py BEFORE.txt AFTER.txt [--all]")
    before, before_total = load(paths[0])
    after, after_total = load(paths[1])
    if not before or not after:
        sys.exit("no scenario lines in one of the files: save what PacingExplore/cases printed")
    for name in before:
        if name not in after:
            print(f"{name}: only in {paths[0]}")
            continue
        old, new = summary(before[name]), summary(after[name])
        if old != new or "--all" in argv:
            print(f"{name}\n  before  {old}\n  after   {new}")
    for name in after:
        if name not in before:
            print(f"{name}: only in {paths[1]}")
    print(f"before: {before_total}\nafter:  {after_total}")


if __name__ == "__main__":
    main(sys.argv[1:])
