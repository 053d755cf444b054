"""A synthetic Codex home of legacy rollout files, for end-to-end benchmarks with the real
`codex app-server` (which lists and reads them as its own, see tests/support/codex_home.py).

    python -m tests.bench.rollout_corpus OUT --threads 3000 --large 2 --large-mb 38 --seed 7

Small threads come out near `--small-kb` each (turns of a user question and an agent
answer drawn from a word list), the `--large` ones near `--large-mb`; every tenth
thread is archived. The same options and seed write the same files.
"""

from __future__ import annotations

import argparse
import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from tests.bench.corpus import _WORDS
from tests.support.codex_home import FixtureThread, FixtureTurn, make_codex_home, uuid7_like

# A turn's bytes in the rollout: the user text appears twice, the agent text three times
# (the response item the model sees, the event item `thread/read` shows, the task end), plus framing.
_TURN_OVERHEAD = 700
BASE = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


@dataclass(frozen=True)
class RolloutCorpus:
    threads: int
    large: int = 0
    large_mb: float = 38.0
    small_kb: float = 80.0
    seed: int = 7

    def label(self) -> str:
        large = f", {self.large} of {self.large_mb:g} MB" if self.large else ""
        return f"{self.threads:,} threads{large}"


class _Text:
    """Paragraphs drawn once from a seeded pool: fast, and text-like to a compressor."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.pool = [" ".join(rng.choices(_WORDS, k=rng.randint(20, 160))) for _ in range(400)]

    def about(self, size: int) -> str:
        parts: list[str] = [self.rng.choice(self.pool)[:size]]
        length = len(parts[0])
        while length < size:
            part = self.rng.choice(self.pool)
            parts.append(part)
            length += len(part) + 1
        return " ".join(parts)


def _thread(n: int, corpus: RolloutCorpus, text: _Text, size: int) -> FixtureThread:
    created = BASE + timedelta(minutes=n)
    agent_size = max(200, min(size // 20, 64_000))
    turns: list[FixtureTurn] = []
    written = 600  # the session_meta line
    while written < size:
        user, agent = text.about(100), text.about(agent_size)
        turns.append(FixtureTurn(id=uuid7_like(corpus.seed * 10_000_000 + n * 10_000 + len(turns), created),
                                 user=user, agent=agent))
        written += 2 * len(user) + 3 * len(agent) + _TURN_OVERHEAD
    return FixtureThread(
        id=uuid7_like(corpus.seed * 10_000_000 + n, created), created_at=created,
        updated_at=created + timedelta(seconds=30), turns=tuple(turns), archived=n % 10 == 9,
        cwd=f"/home/bench/project-{n % 40}",
    )


def write_corpus(home: Path, corpus: RolloutCorpus) -> Path:
    """Write `corpus` into the Codex home `home`, one thread at a time (bounded memory)."""
    rng = random.Random(corpus.seed)
    text = _Text(rng)
    large_at = set(rng.sample(range(corpus.threads), corpus.large)) if corpus.large else set()
    home.mkdir(parents=True, exist_ok=True)
    for n in range(corpus.threads):
        size = int(corpus.large_mb * 1_000_000) if n in large_at else int(corpus.small_kb * 1000 * rng.uniform(0.6, 1.4))
        make_codex_home(home, [_thread(n, corpus, text, size)])
    return home


def rollout_bytes(home: Path) -> int:
    return sum(p.stat().st_size for tree in ("sessions", "archived_sessions") for p in (home / tree).rglob("*.jsonl"))


def largest_rollout_bytes(home: Path) -> int:
    """The largest thread's rollout file: what goal 4 bounds peak memory by."""
    return max((p.stat().st_size for tree in ("sessions", "archived_sessions")
                for p in (home / tree).rglob("*.jsonl")), default=0)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.rollout_corpus", description=__doc__)
    parser.add_argument("out", type=Path)
    parser.add_argument("--threads", type=int, default=3000)
    parser.add_argument("--large", type=int, default=0)
    parser.add_argument("--large-mb", type=float, default=38.0)
    parser.add_argument("--small-kb", type=float, default=80.0)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    corpus = RolloutCorpus(args.threads, args.large, args.large_mb, args.small_kb, args.seed)
    write_corpus(args.out, corpus)
    print(f"{corpus.label()}: {rollout_bytes(args.out):,} bytes of rollouts in {args.out}")


if __name__ == "__main__":
    main()
