"""Shared set-up for the FabricTarget tests: a real SQLite store in tmp_path, a settable
clock, prepared sessions built with lib.prepare from hand-made snapshots, and readers
for what a publication left in the store."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from lib.fabric.graph_read import read_graph_value
from lib.fabric.identity import load_or_create_identity
from lib.fabric.publication import PublicationSummary, PublishedOutcome
from lib.fabric.store import Store, open_store
from lib.fabric.target import FabricTarget
from lib.fabric.values import Link
from lib.git_context import GitContextResolver
from lib.prepare import PreparedSession, prepare_session
from lib.types import (
    DriverCapabilities,
    NativeSessionSnapshot,
    NormalizedMessage,
    SessionSummary,
    SourceDescriptor,
)

START = datetime(2026, 7, 1, 12, 0, 0, tzinfo=UTC)
SPACE = "did:key:z6MkTargetTestSpace"


class Clock:
    """A clock the test moves by hand."""

    def __init__(self, now: datetime = START) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


def iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.000Z")


@dataclass
class Env:
    tmp: Path
    store: Store
    store_url: str
    owner: str
    clock: Clock
    resolver: GitContextResolver

    def target(self, **options: Any) -> FabricTarget:
        base: dict[str, Any] = {
            "space": SPACE,
            "owner": self.owner,
            "store_url": self.store_url,
            "clock": self.clock,
            "resolver": self.resolver,
        }
        base.update(options)
        return FabricTarget.open(self.store, **base)


def make_env(tmp_path: Path, resolver: GitContextResolver | None = None) -> Env:
    url = f"sqlite:///{tmp_path / 'fabric.db'}"
    owner = load_or_create_identity(tmp_path / "identity").did
    return Env(tmp_path, open_store(url), url, owner, Clock(), resolver or GitContextResolver())


def descriptor(
    source_id: str = "codex", driver: str = "codex-app-server", **caps: Any
) -> SourceDescriptor:
    capabilities = DriverCapabilities(list_sessions=True, read_session=True, **caps)
    return SourceDescriptor(id=source_id, driver=driver, capabilities=capabilities)


def snapshot(
    native_session_id: str,
    *,
    messages: int = 2,
    complete: bool = True,
    updated_at: datetime | None = START,
    cwd: str | None = None,
    title: str | None = None,
    text: str = "message",
    started_as: str | None = None,
) -> NativeSessionSnapshot:
    """A snapshot with `messages` user/assistant events and their normalized messages."""
    roles = ("user", "assistant")
    events = [
        {"type": roles[i % 2], "id": f"{native_session_id}-e{i}", "text": f"{text} {i}"}
        for i in range(messages)
    ]
    return NativeSessionSnapshot(
        summary=SessionSummary(
            native_session_id=native_session_id,
            title=title or f"title of {native_session_id}",
            cwd=cwd,
            updated_at=iso(updated_at) if updated_at else None,
            started_as=started_as,
            raw={"id": native_session_id, "native": True},
        ),
        events=events,
        normalized_messages=[
            NormalizedMessage(
                id=e["id"], role=e["type"], kind=e["type"], text=e["text"], event_index=i
            )
            for i, e in enumerate(events)
        ],
        complete=complete,
    )


def prepared(
    source: SourceDescriptor, snap: NativeSessionSnapshot, *, target_chunk_bytes: int = 512 * 1024
) -> PreparedSession:
    return prepare_session(source.id, snap, target_chunk_bytes, driver=source.driver)


def outcome(
    source_id: str,
    listed: Iterable[str],
    *,
    inventory_complete: bool = True,
    complete: bool | None = None,
    errors: Sequence[dict[str, Any]] = (),
) -> dict[str, Any]:
    ids = list(listed)
    return {
        "sourceId": source_id,
        "inventoryComplete": inventory_complete,
        "complete": inventory_complete and not errors if complete is None else complete,
        "listedSessionIds": ids,
        "listed": len(ids),
        "errors": list(errors),
    }


def publish(
    target: FabricTarget,
    source: SourceDescriptor,
    snapshots: Sequence[NativeSessionSnapshot],
    *,
    sequence: int | None = None,
    listed: Iterable[str] | None = None,
    inventory_complete: bool = True,
    retained: Sequence[SessionSummary] = (),
    read_errors: Sequence[str] = (),
    preserve: bool = False,
    checkout_directories: Sequence[str] | None = None,
) -> tuple[PublicationSummary, list[PublishedOutcome]]:
    """One source's publication, streamed the way `publish` and `sync` stream it."""
    ids = list(listed) if listed is not None else [
        s.summary.native_session_id for s in snapshots
    ] + [r.native_session_id for r in retained] + list(read_errors)
    results: list[PublishedOutcome] = []
    with target.publication(
        preserve_untouched_status=preserve, checkout_directories=checkout_directories
    ) as pub:
        pub.begin_source(source, sequence)
        for snap in snapshots:
            results.append(pub.add_prepared(prepared(source, snap)))
        for summary in retained:
            results.append(pub.add_retained(source.id, summary))
        for native_id in read_errors:
            result = pub.add_error(source.id, native_id, "read-failed", f"could not read {native_id}")
            assert result is not None
            results.append(result)
        pub.end_source(outcome(source.id, ids, inventory_complete=inventory_complete))
        summary = pub.commit()
    return summary, results


def index(target: FabricTarget, bucket: str = "all") -> dict[str, Any]:
    """A hydrated index, manifests left as links."""
    root = target.all_index_id() if bucket == "all" else target.recent_index_id()
    return read_graph_value(target.store, target.space, root, preserve_link_fields={"manifest"})


def rows(target: FabricTarget, bucket: str = "all") -> dict[str, dict[str, Any]]:
    return {row["key"]: row for row in index(target, bucket)["sessions"]}


def hydrate(target: FabricTarget, cell: str) -> Any:
    return read_graph_value(target.store, target.space, cell)


def key(source_id: str, native_id: str) -> str:
    from lib.session_key import session_key

    return session_key(source_id, native_id)


def links_in(value: Any) -> list[Link]:
    """Every Link inside a stored value."""
    found: list[Link] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, Link):
            found.append(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return found


def reachable(store: Store, roots: Iterable[str], *, skip_fields: frozenset[str] = frozenset()) -> set[str]:
    """IDs of the cells reachable from roots through stored links (fields in skip_fields
    are not followed: e.g. `manifest`, to stay inside the indexes)."""
    seen: set[str] = set()
    frontier = list(roots)
    while frontier:
        cell = frontier.pop()
        if cell in seen:
            continue
        seen.add(cell)
        document = store.read(SPACE, cell)
        assert document is not None, f"a link points at a missing cell {cell}"
        value = document.value
        if isinstance(value, dict) and skip_fields:
            value = {k: v for k, v in value.items() if k not in skip_fields}
        frontier.extend(link.id for link in links_in(value))
    return seen


def changed_since(store: Store, seq: int) -> set[str]:
    return {cell for cell, _ in store.changes_since(SPACE, seq)}


def seqs(store: Store) -> dict[str, int]:
    return dict(store.changes_since(SPACE, 0))
