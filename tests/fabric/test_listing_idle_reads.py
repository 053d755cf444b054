"""The listing idle sync's per-session work (issue 14 goal 3, session 21): the prior index
read without a Link per preview, a retained session that changes nothing keeping its
prior row, and Git looked up once per working directory, never for a directory that does
not exist. What is published stays as it was: a retained session still follows a real
change of its checkout."""

from __future__ import annotations

import os
import zlib
from pathlib import Path

import orjson
import pytest

from lib.fabric import session_index as idx
from lib.fabric.index_store import read_prior
from lib.fabric.packed_previews import StoredPreviews
from lib.fabric.packed_rows import PackedRow
from lib.fabric.value_decoding import decode, decode_keeping
from lib.fabric.values import Link, ValueEncodingError
from lib.git_context import GitContextResolver, GitMetadata, GitObservation, SubprocessGitRunner
from tests.fabric.target_helpers import descriptor, make_env, publish, rows, snapshot
from tests.support.git_repos import GitRepos, RecordingRunner

SPACE = "did:key:z6MkListingSpace"


def _row_cells(target) -> dict[str, tuple[str, int]]:
    """key -> (the row's cell, its version) as the complete index links them."""
    root = target.store.read(target.space, target.all_index_id()).value
    out = {}
    for link in root["sessions"]:
        row = target.store.read(target.space, link.id).value
        out[row["key"]] = (link.id, target.store._read_version(target.space, link.id))
    return out


def test_a_retained_session_follows_a_branch_switch_of_its_checkout_when_nothing_else_changed(
    tmp_path: Path,
) -> None:
    repos = GitRepos(tmp_path / "git")
    repo = repos.init("project", branch="main")
    target = make_env(tmp_path, GitContextResolver(repos.runner())).target()
    snap = snapshot("s1", messages=3, cwd=str(repo))
    publish(target, descriptor(), [snap])
    assert rows(target)["codex/s1"]["gitBranch"] == "main"

    publish(target, descriptor(), [], retained=[snap.summary])  # nothing changed
    assert rows(target)["codex/s1"]["gitBranch"] == "main"
    repos.git(repo, "checkout", "--quiet", "-b", "feature")
    publish(target, descriptor(), [], retained=[snap.summary])  # same capabilities, new branch

    row = rows(target)["codex/s1"]
    assert row["gitBranch"] == "feature" and row["gitWorktreeRoot"] == str(repo)
    assert row["status"] == "complete"


def test_a_retained_session_whose_refresh_changes_nothing_keeps_its_row_cell_unwritten(tmp_path: Path) -> None:
    repos = GitRepos(tmp_path / "git")
    repo = repos.init("project", branch="main")
    target = make_env(tmp_path, GitContextResolver(repos.runner())).target()
    snaps = [snapshot("s1", messages=14, cwd=str(repo)), snapshot("s2", messages=2, cwd=str(tmp_path / "gone"))]
    publish(target, descriptor(), snaps)
    before = _row_cells(target)

    summary, results = publish(target, descriptor(), [], retained=[s.summary for s in snaps])

    assert [r.action for r in results] == ["retained", "retained"]
    assert _row_cells(target) == before  # same cells, same versions: nothing rewritten


def _prior_row(**fields) -> PackedRow:
    row = {"key": "codex/s1", "status": "complete", "cwd": "/w", "gitRepo": "example.com:team/w",
           "gitBranch": "main", "gitWorktreeRoot": "/w", "capabilities": {"listSessions": True, "modes": []}}
    row.update(fields)
    return PackedRow({k: v for k, v in row.items() if v is not _ABSENT})


_ABSENT = object()
_CAPS = {"listSessions": True, "modes": []}


def _checkout(branch: str | None = "main", repo: str | None = "example.com:team/w") -> GitMetadata:
    return GitMetadata(worktree_root="/w", branch=branch, repo=repo, observed_at="2026-12-01T00:00:00.000Z")


def test_refresh_keeps_a_row_only_when_the_refreshed_row_would_equal_it() -> None:
    assert idx.refresh_keeps(_prior_row(), _CAPS, _checkout())
    assert idx.refresh_keeps(_prior_row(), _CAPS, None)  # no observation leaves the Git fields
    assert not idx.refresh_keeps(_prior_row(), _CAPS, _checkout(branch="feature"))
    assert not idx.refresh_keeps(_prior_row(), _CAPS, _checkout(branch=None))  # a detached HEAD clears it
    assert not idx.refresh_keeps(_prior_row(), _CAPS, _checkout(repo=None))
    assert not idx.refresh_keeps(_prior_row(gitBranch=_ABSENT), _CAPS, _checkout())  # the field would appear
    assert not idx.refresh_keeps(_prior_row(), {**_CAPS, "prompt": True}, _checkout())
    assert not idx.refresh_keeps(_prior_row(), {"listSessions": 1, "modes": []}, _checkout())  # 1 is not true
    assert not idx.refresh_keeps(_prior_row(status="stale"), _CAPS, _checkout())
    assert not idx.refresh_keeps(_prior_row(deletedAt="2026-01-01T00:00:00.000Z"), _CAPS, _checkout())
    for prior, caps, metadata in [(_prior_row(), _CAPS, _checkout()), (_prior_row(), _CAPS, None)]:
        refreshed = idx.with_status(idx.refreshed_row(prior, capabilities=caps, metadata=metadata), "complete")
        assert refreshed == prior.plain()


def test_reading_the_prior_index_makes_no_link_of_a_preview(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env = make_env(tmp_path)
    target = env.target()
    snaps = [snapshot(f"s{n}", messages=14) for n in range(5)]
    publish(target, descriptor(), snaps)
    published = rows(target)
    fresh = env.target()  # no committed prior in memory: read from the store
    made: list[Link] = []
    real = Link.__post_init__

    def counted(self: Link) -> None:
        made.append(self)
        real(self)

    monkeypatch.setattr(Link, "__post_init__", counted)
    prior = read_prior(fresh.graphs, fresh.cells)
    monkeypatch.undo()

    assert sorted(prior.rows) == sorted(published)
    root = target.store.read(target.space, target.all_index_id()).value
    preview_links = {m.id for link in root["sessions"]
                     for m in target.store.read(target.space, link.id).value["recentMessages"]}
    assert len(preview_links) == 5 * 12
    assert made and not preview_links & {link.id for link in made}  # row and manifest links only
    for key, row in prior.rows.items():
        previews = row["recentMessages"]
        assert isinstance(previews, StoredPreviews)
        assert previews.unpack() == published[key]["recentMessages"] != []
        assert row["manifest"] == published[key]["manifest"]


def test_a_prior_row_whose_previews_are_not_links_is_read_and_validated_as_before(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    target = env.target()
    publish(target, descriptor(), [snapshot("s1", messages=3)])
    root = target.store.read(target.space, target.all_index_id()).value
    [link] = root["sessions"]
    row = dict(target.store.read(target.space, link.id).value)
    row["recentMessages"] = [{"role": "user", "text": "inline"}]  # a hand-written row: inline previews
    with target.store.transaction(target.space, target.writer) as tx:
        tx.write(link.id, row, target.labels)
        tx.commit()

    fresh = env.target()
    prior = read_prior(fresh.graphs, fresh.cells)
    assert prior.rows["codex/s1"]["recentMessages"].unpack() == [{"role": "user", "text": "inline"}]


def test_decode_keeping_leaves_only_a_named_top_level_field_undecoded() -> None:
    tagged = {"/quote": Link("of:x", SPACE).to_json()}
    obj = {"previews": [tagged], "manifest": tagged, "n": {"/BigInt@1": "AQ"}}
    out = decode_keeping(obj, frozenset({"previews"}))
    assert out == {"previews": [tagged], "manifest": Link("of:x", SPACE), "n": decode(obj["n"])}
    assert list(out) == list(obj)
    assert decode_keeping([tagged], frozenset({"previews"})) == [Link("of:x", SPACE)]
    assert decode_keeping(tagged, frozenset({"previews"})) == Link("of:x", SPACE)  # a tagged value
    with pytest.raises(ValueEncodingError):
        decode_keeping({"/quote": {}, "previews": []}, frozenset({"previews"}))  # a tag mixed with keys


def test_git_is_not_started_for_a_working_directory_that_does_not_exist(tmp_path: Path) -> None:
    runner = SubprocessGitRunner(executable=str(tmp_path / "no-such-git"))  # starting it fails with 127
    assert runner(["-C", str(tmp_path / "gone"), "rev-parse", "--show-toplevel"]).returncode == 128
    assert runner(["-C", str(tmp_path), "rev-parse", "--show-toplevel"]).returncode == 127  # tried
    (tmp_path / "file").write_text("")
    assert runner(["-C", str(tmp_path / "file"), "rev-parse"]).returncode == 128  # not a directory


def test_a_directory_that_does_not_exist_has_no_checkout_with_the_real_git(tmp_path: Path) -> None:
    repos = GitRepos(tmp_path / "git")
    repo = repos.init("project")
    resolver = GitContextResolver(repos.runner())
    assert resolver.resolve(str(tmp_path / "gone")) is None
    assert resolver.resolve(str(repo / "not-yet")) is None
    (repo / "not-yet").mkdir()
    metadata = resolver.resolve(str(repo / "not-yet"))  # a new observation sees it
    assert metadata is not None and metadata.worktree_root == str(repo)


def test_sessions_of_one_working_directory_cost_one_realpath_and_one_lookup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repos = GitRepos(tmp_path / "git")
    repo = repos.init("project", branch="main")
    recording = RecordingRunner(repos.runner())
    observation = GitObservation(recording, lambda: GitContextResolver().clock())
    resolved: list[str] = []
    real = os.path.realpath

    def counted(path, *args, **kwargs):
        resolved.append(os.fspath(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os.path, "realpath", counted)
    answers = [observation.resolve(str(repo)) for _ in range(50)]
    answers += [observation.resolve(str(tmp_path / "gone")) for _ in range(50)]
    monkeypatch.undo()

    assert all(a is answers[0] for a in answers[:50]) and answers[0].branch == "main"
    assert answers[50:] == [None] * 50
    # the directory once, and its checkout's root (the same path here) once
    assert resolved.count(str(repo)) == 2 and resolved.count(str(tmp_path / "gone")) == 1
    assert [c for c in recording.commands() if c[:1] == ("rev-parse",) and "--show-toplevel" in c] == [
        ("rev-parse", "--show-toplevel")] * 2  # the checkout's and the missing directory's


def _stored(value) -> str | bytes:
    from lib.fabric import stored_values, values

    return stored_values.encode(values.dumps(value), SPACE)


def test_the_sqlite_store_hands_back_a_kept_list_of_same_space_links_as_their_ids() -> None:
    from lib.fabric import stored_values

    links = [Link(f"of:fid1:{n:043d}", SPACE) for n in range(12)]
    keep = frozenset({"previews"})
    value = {"key": "k", "previews": links, "manifest": links[0], "n": 1}
    stored = _stored(value)
    text = zlib.decompress(stored).decode() if isinstance(stored, bytes) else stored
    assert text.count("\x01") == 13  # stored short: twelve previews and the manifest
    out = stored_values.read_keeping(stored, SPACE, keep)
    assert type(out["previews"]) is stored_values.SameSpaceLinks
    assert list(out["previews"]) == [link.id for link in links]
    assert {k: v for k, v in out.items() if k != "previews"} == {"key": "k", "manifest": links[0], "n": 1}
    assert list(out) == list(decode_keeping(orjson.loads(stored_values.decode(stored, SPACE)), keep))


@pytest.mark.parametrize("value", [
    {"previews": [Link("of:fid1:" + "a" * 43, SPACE), {"inline": True}]},  # not links only
    {"previews": [Link("of:fid1:" + "a" * 43, "did:key:z6MkOther")]},  # another space's link
    {"previews": [Link("of:fid1:" + "a" * 43, SPACE, ("x",))]},  # a link at a path
    {"deep": {"previews": [Link("of:fid1:" + "a" * 43, SPACE)]}},  # not the top level's
    {"previews": [], "deep": {"previews": [Link("of:fid1:" + "b" * 43, SPACE)]}},  # the key twice
    [Link("of:fid1:" + "a" * 43, SPACE)],  # not an object
])
def test_a_kept_field_of_any_other_shape_reads_as_its_fvj1_json(value) -> None:
    from lib.fabric import stored_values

    keep = frozenset({"previews"})
    stored = _stored(value)
    out = stored_values.read_keeping(stored, SPACE, keep)
    assert out == decode_keeping(orjson.loads(stored_values.decode(stored, SPACE)), keep)
    assert not isinstance(out, dict) or type(out.get("previews")) is not stored_values.SameSpaceLinks
