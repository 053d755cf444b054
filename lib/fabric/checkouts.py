"""Checkout rows: one shallow row per worktree that a live session names or that a
filesystem scan discovered (spec "Session indexes").

A row records root, branch, commit, selected remote, every remote, the observation
time and its `origins` ("sessions", "discovery"). One `CheckoutObserver` belongs to
one publication and shares its Git observation scope, so sessions in one repository
cost one set of git commands.

Discovery: a publication given no directory list keeps the prior discovery rows (a
targeted refresh must not delete discovery-only inventory); a list, even empty, is a
complete scan and replaces them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from lib.git_context import GitMetadata, GitObservation


def checkout_row(metadata: GitMetadata, origins: Iterable[str]) -> dict[str, Any]:
    """`id` repeats the root so the row keeps one stable array cell across publications
    (without it, its identity would be a content hash and change with every commit)."""
    return {
        "id": metadata.worktree_root,
        "root": metadata.worktree_root,
        "branch": metadata.branch,
        "commit": metadata.commit,
        "repo": metadata.repo,
        "remotes": [r.to_wire() for r in metadata.remotes],
        "observedAt": metadata.observed_at,
        "origins": sorted(set(origins)),
    }


def has_origin(row: Mapping[str, Any], origin: str) -> bool:
    origins = row.get("origins")
    return isinstance(origins, list) and origin in origins


def merge_checkouts(
    *,
    session_rows: Mapping[str, Mapping[str, Any]],
    discovery_rows: Mapping[str, Mapping[str, Any]],
) -> list[dict[str, Any]]:
    """One row per root with joined origins, sorted by root (code point order); where
    both parts know a root, the session part's row is used."""
    merged: dict[str, dict[str, Any]] = {}
    for root, row in discovery_rows.items():
        merged[root] = {**row, "origins": ["discovery"]}
    for root, row in session_rows.items():
        origins = ["discovery", "sessions"] if root in merged else ["sessions"]
        merged[root] = {**row, "origins": origins}
    return [merged[root] for root in sorted(merged)]


class CheckoutObserver:
    """Observes checkouts for one publication and builds its checkout rows."""

    def __init__(self, observation: GitObservation) -> None:
        self._observation = observation
        self._seen: dict[str, GitMetadata] = {}

    def observe(self, directory: Any) -> GitMetadata | None:
        """The checkout holding `directory` (a session's cwd), remembered by root."""
        if not isinstance(directory, str) or not directory:
            return None
        metadata = self._observation.resolve(directory)
        if metadata is not None:
            self._seen[metadata.worktree_root] = metadata
        return metadata

    def rows(
        self,
        *,
        live_roots: Iterable[str],
        prior: Sequence[Mapping[str, Any]],
        directories: Sequence[str] | None,
    ) -> list[dict[str, Any]]:
        """The checkout rows of an index whose live sessions name `live_roots`.

        A root observed in this publication uses that observation; a root only an
        untouched session names keeps its prior row (or is observed now if it has none).
        """
        prior_by_root = {r["root"]: dict(r) for r in prior if isinstance(r.get("root"), str)}
        fresh: set[str] = set()
        sessions: dict[str, dict[str, Any]] = {}
        for root in live_roots:
            if root in sessions:
                continue
            metadata = self._seen.get(root)
            if metadata is None and root in prior_by_root:
                sessions[root] = prior_by_root[root]
                continue
            metadata = metadata or self.observe(root)
            if metadata is not None and metadata.worktree_root == root:
                sessions[root] = checkout_row(metadata, ["sessions"])
                fresh.add(root)
        if directories is None:
            discovery = {
                root: row for root, row in prior_by_root.items() if has_origin(row, "discovery")
            }
        else:
            discovery = {}
            for directory in directories:
                metadata = self._observation.resolve(directory)
                if metadata is not None:
                    discovery[metadata.worktree_root] = checkout_row(metadata, ["discovery"])
        for root, row in discovery.items():
            if root in sessions and root not in fresh and directories is not None:
                sessions[root] = row  # the scan observed it now; the session row is older
        return merge_checkouts(session_rows=sessions, discovery_rows=discovery)
