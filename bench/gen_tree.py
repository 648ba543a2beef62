#!/usr/bin/env python3
"""Generates the folio-fs benchmark tree, deterministically (same bytes on every run).

Layout: OUT/pNN/dNN/fNNNNN.{rs,md,txt,ts}: 10 parts x 50 directories x 100 files = 50,000 files,
about 10.5 KB each (~525 MB in all). Text is drawn from a fixed pool of pseudo-English and
code-like blocks; one file in 500 carries the rare word `zqxjv_needle`.

Usage: gen_tree.py OUT
"""

import os
import sys

PARTS, DIRS, FILES = 10, 50, 100
BLOCKS, BLOCK_BYTES, BLOCKS_PER_FILE = 4000, 2600, 4
EXTS = ["rs", "md", "txt", "ts"]


class Lcg:
    """A tiny deterministic generator (64-bit LCG), independent of Python's `random`."""

    def __init__(self, seed):
        self.state = seed

    def next(self, bound):
        self.state = (self.state * 6364136223846793005 + 1442695040888963407) % (1 << 64)
        return (self.state >> 33) % bound


def vocabulary(rng):
    syllables = ["ka", "lo", "mi", "ra", "te", "su", "ne", "po", "vi", "da", "qu", "an", "er",
                 "in", "or", "ul", "th", "st", "ch", "br"]
    words = set()
    while len(words) < 5000:
        words.add("".join(syllables[rng.next(len(syllables))] for _ in range(1 + rng.next(4))))
    words = sorted(words)
    types = [w.capitalize() + "Error" for w in words[:200]]
    return words, types


def block(rng, words, types):
    lines, size = [], 0
    while size < BLOCK_BYTES:
        kind = rng.next(10)
        if kind == 0:
            line = "fn %s_%s(x: %s) -> Result<(), %s> {" % (
                words[rng.next(len(words))], words[rng.next(len(words))],
                types[rng.next(len(types))], types[rng.next(len(types))])
        elif kind == 1:
            line = "    let %s = %d; // TODO %s" % (
                words[rng.next(len(words))], rng.next(100000), words[rng.next(len(words))])
        elif kind == 2:
            line = "}"
        else:
            n = 6 + rng.next(9)
            line = " ".join(words[rng.next(len(words))] for _ in range(n))
            if rng.next(4) == 0:
                line = line.capitalize() + "."
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines) + "\n"


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gen_tree.py OUT")
    out = sys.argv[1]
    rng = Lcg(20260801)
    words, types = vocabulary(rng)
    pool = [block(rng, words, types) for _ in range(BLOCKS)]
    total, count = 0, 0
    for p in range(PARTS):
        for d in range(DIRS):
            directory = os.path.join(out, "p%02d" % p, "d%02d" % d)
            os.makedirs(directory, exist_ok=True)
            for f in range(FILES):
                number = (p * DIRS + d) * FILES + f
                ext = EXTS[number % len(EXTS)]
                parts = ["// file %d\n" % number]
                parts.extend(pool[rng.next(BLOCKS)] for _ in range(BLOCKS_PER_FILE))
                if number % 500 == 7:
                    parts.insert(1 + rng.next(BLOCKS_PER_FILE), "the zqxjv_needle is here\n")
                data = "".join(parts).encode()
                with open(os.path.join(directory, "f%05d.%s" % (number, ext)), "wb") as fh:
                    fh.write(data)
                total += len(data)
                count += 1
    print("generated %d files, %.1f MB in %s" % (count, total / 1e6, out))


if __name__ == "__main__":
    main()
