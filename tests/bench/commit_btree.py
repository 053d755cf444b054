"""The graph batches' SQLite commit alone, as the store grows (issue 14 goal 1 at 25,000 threads).

    python -m tests.bench.commit_btree DIR BATCHES [--rows-per-batch 3350] [--block 50]
        [--pragma NAME=VALUE ...] [--page-size N] [--staged K | --key-index-at-end]

Batches of new rows (random 32-byte keys, as content-addressed cell IDs are; 600-byte
TEXT values, the stored row's mean at 3,000 threads) into a store made with the
store's own `connect`/`initialize` and pragmas, by `sqlite_schema.INSERT_MANY` in
statements of about `sqlite_rows_out.GROUP_BYTES`, one transaction a batch: what a
first sync's graph batch commit does, without the rest of the sync. Prints, per block
of batches, the commit's CPU (RUSAGE_SELF around the transactions only, so the rows'
generation is not counted), µs a row, `/proc/self/io` write_bytes and wchar, and peak
RSS. A standalone script, not a section of `tests.bench.run` (docs/store-size-and-speed.md,
"Session 26: the 25,000-thread first sync").

Two designs to compare before building one: `--staged K` inserts into a small staging
table (its own unique key) and moves its rows into `documents` in key order every K
batches; `--key-index-at-end` writes `documents` without its key index
(`documents_by_cell`, dropped as a first sync drops it since schema version 3,
sqlite_key_index.py) and builds it once after the last batch, as the store does.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
from itertools import accumulate
from pathlib import Path

from lib.fabric.sqlite_connections import connect, initialize
from lib.fabric.sqlite_key_index import build
from lib.fabric.sqlite_rows_out import GROUP_BYTES, _numbers
from lib.fabric.sqlite_schema import INSERT_MANY, KEY_INDEX

VALUE_BYTES = 600
STAGING = (
    "CREATE TABLE staging (space_id INTEGER NOT NULL, cell_id NOT NULL, seq INTEGER NOT NULL, "
    "labels_id INTEGER NOT NULL, value, UNIQUE (space_id, cell_id))"
)


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def io_bytes() -> tuple[int, int]:
    """(write_bytes, wchar) of this process so far."""
    fields = dict(line.split(": ") for line in Path("/proc/self/io").read_text().splitlines())
    return int(fields["write_bytes"]), int(fields["wchar"])


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3


def open_store(directory: Path, args: argparse.Namespace):
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    path = str(directory / "store.sqlite3")
    conn = connect(path, 30.0, memory=False)
    if args.page_size:  # before the schema exists: the file's page size is fixed then
        conn.execute(f"PRAGMA page_size = {args.page_size}")
    initialize(conn, path, memory=False)
    for pragma in args.pragma:
        conn.execute(f"PRAGMA {pragma}")
    conn.execute("INSERT INTO spaces (did) VALUES ('did:bench')")
    conn.execute("INSERT INTO labels (json) VALUES ('{}')")
    if args.staged:
        conn.execute(STAGING)
    if args.key_index_at_end:
        conn.execute(f"DROP INDEX {KEY_INDEX}")
    return conn


def insert_batch(conn, statement: str, seq: int, keys: list[bytes], values: list[bytes]) -> None:
    """The batch's rows by INSERT_MANY, in statements of about GROUP_BYTES of values."""
    per_statement = max(1, GROUP_BYTES // VALUE_BYTES)
    for start in range(0, len(keys), per_statement):
        ids, texts = keys[start : start + per_statement], values[start : start + per_statement]
        conn.execute(statement, (
            1, seq, len(ids), b"".join(ids), _numbers(accumulate(map(len, ids))),
            b"".join(texts), _numbers(accumulate(map(len, texts))), b"bt" * len(ids), _numbers([1] * len(ids)),
        ))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("directory", type=Path)
    parser.add_argument("batches", type=int)
    parser.add_argument("--rows-per-batch", type=int, default=3350)
    parser.add_argument("--block", type=int, default=50)
    parser.add_argument("--pragma", action="append", default=[])
    parser.add_argument("--page-size", type=int)
    parser.add_argument("--seed", type=int, default=1)
    design = parser.add_mutually_exclusive_group()
    design.add_argument("--staged", type=int, default=0)
    design.add_argument("--key-index-at-end", action="store_true")
    args = parser.parse_args()
    conn = open_store(args.directory, args)
    statement = INSERT_MANY.replace("INSERT INTO documents", "INSERT INTO staging") if args.staged else INSERT_MANY
    generate = random.Random(args.seed)
    commit_cpu, (written, passed) = 0.0, io_bytes()
    for batch in range(1, args.batches + 1):
        keys = sorted(generate.randbytes(32) for _ in range(args.rows_per_batch))  # in key order, as RowsOut
        values = [generate.randbytes(VALUE_BYTES // 2).hex().encode("ascii") for _ in keys]
        start = cpu_seconds()
        conn.execute("BEGIN IMMEDIATE")
        insert_batch(conn, statement, batch, keys, values)
        if args.staged and batch % args.staged == 0:
            conn.execute("INSERT INTO documents SELECT * FROM staging ORDER BY space_id, cell_id")
            conn.execute("DELETE FROM staging")
        conn.execute("UPDATE spaces SET head = ? WHERE id = 1", (batch,))
        conn.execute("COMMIT")
        commit_cpu += cpu_seconds() - start
        if batch % args.block == 0:
            now_written, now_passed = io_bytes()
            rows = args.block * args.rows_per_batch
            print(f"rows {batch * args.rows_per_batch / 1e6:.2f} M  commit CPU {commit_cpu:.2f} s  "
                  f"{commit_cpu / rows * 1e6:.1f} us/row  write_bytes {(now_written - written) / 1e6:.0f} MB  "
                  f"wchar {(now_passed - passed) / 1e6:.0f} MB  peak {peak_mb():.0f} MB  "
                  f"load {os.getloadavg()[0]:.1f}", flush=True)
            commit_cpu, written, passed = 0.0, now_written, now_passed
    if args.key_index_at_end:
        start, (written, _) = cpu_seconds(), io_bytes()
        build(conn)
        print(f"key index built at the end: CPU {cpu_seconds() - start:.2f} s  "
              f"write_bytes {(io_bytes()[0] - written) / 1e6:.0f} MB  peak {peak_mb():.0f} MB", flush=True)
    conn.close()


if __name__ == "__main__":
    main()
