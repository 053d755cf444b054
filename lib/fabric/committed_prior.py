"""What `read_prior` would read back right after an index commit (index_store.
commit_indexes), kept by this process as the next publication's prior: its rows made
only when first read (PriorIndex.ready)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from lib.fabric.graph_plan import PlannedGraph
from lib.fabric.ordering import OrderingState
from lib.fabric.packed_previews import FIELD as PREVIEWS
from lib.fabric.packed_previews import StoredPreviews
from lib.fabric.packed_rows import PackedRow, packed
from lib.fabric.row_list import RowList
from lib.fabric.session_graph import GraphTarget
from lib.fabric.values import Link

if TYPE_CHECKING:
    from lib.fabric.index_store import IndexCells, PriorIndex


def committed_prior(
    target: GraphTarget,
    cells: IndexCells, complete: Mapping[str, Any], ordering: OrderingState, graph: PlannedGraph, seq: int
) -> PriorIndex:
    """What `read_prior` would read back right after this commit (each row's previews
    now read from its committed cell: the publication's spill goes with it). Its rows
    are made when first read (PriorIndex.ready): until then only the commit's own
    list of rows and its root's links (root_links.RootLinks: IDs) are kept."""
    sessions, links = complete["sessions"], graph.root.value["sessions"]
    sessions = CommittedRows.of(sessions)

    def make(prior: PriorIndex) -> None:
        prior.rows = {
            row["key"]: _with_stored_previews(target, packed(row), link)
            for row, link in zip(sessions, links, strict=True)
        }
        prior.row_links = {row["key"]: link for row, link in zip(sessions, links, strict=True)}

    from lib.fabric.index_store import PriorIndex  # index_store imports this module

    return PriorIndex(
        sources=list(complete["sources"]),
        checkouts=list(complete["checkouts"]),
        generation=complete["generation"],
        versions={cells.all: seq, cells.recent: seq, cells.ordering: seq},
        ordering=ordering,
        pending=make,
    )


# A commit's rows in order, kept until they are made (PriorIndex.ready): a row of the
# prior table (prior_table.py) as its place there, an int in one array, any other as
# itself. At 25,000 rows the rows themselves (a TableRow and its place's int each, about
# 3 MB) were held from the commit to the end of a one-shot sync, which never reads them
# (issue 14 goal 4); the table is held either way (its rows refer to it). The values'
# own list when index_values made one (row_list.py).
CommittedRows = RowList


def _with_stored_previews(target: GraphTarget, row: PackedRow, link: Any) -> PackedRow:
    """`row` with its previews read from its committed cell (unless they are already)."""
    previews = row.get(PREVIEWS)
    if previews is None or type(link) is not Link:
        return row
    if isinstance(previews, StoredPreviews) and previews == StoredPreviews(target.store, target.space, link.id):
        return row
    return row.with_previews(StoredPreviews(target.store, target.space, link.id))
