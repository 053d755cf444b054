"""Checkout discovery below configured roots (spec "Session indexes"): the scan over real
git repositories, and `agentctl sync` publishing what it found as discovery-only rows."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest

from lib.checkout_discovery import CheckoutDiscoveryError, discover_checkouts
from lib.errors import ExitCode
from lib.fabric.session_reader import SessionReader
from lib.fabric.sqlite_store import SQLiteStore
from lib.git_context import GitContextResolver
from lib.pipeline.refresh import refresh_session
from tests.fabric.target_helpers import descriptor, index, make_env, publish, snapshot
from tests.support.cli import CODEX_BIN, agentctl_env, pipeline, run
from tests.support.codex_home import demo_threads, make_codex_home
from tests.support.git_repos import GitRepos
from tests.support.scripted_driver import ScriptedDriver

CLOCK = "2026-02-12T09:00:00.000Z"


@pytest.fixture
def repos(tmp_path) -> GitRepos:
    return GitRepos(tmp_path / "git")


@pytest.fixture
def tree(repos):
    """Below `src`: two checkouts (one two levels down), a linked worktree beside its
    main checkout, a stale worktree marker, a `.git` directory without HEAD, and a
    checkout in a hidden directory and in node_modules (both never entered)."""
    src = repos.root / "src"
    alpha = repos.init("src/alpha")
    beta = repos.init("src/group/beta")
    worktree = src / "alpha-feature"
    repos.git(alpha, "worktree", "add", "--quiet", "-b", "feature", str(worktree))
    stale = src / "stale"
    stale.mkdir()
    (stale / ".git").write_text(f"gitdir: {repos.root / 'nowhere' / '.git' / 'worktrees' / 'stale'}\n")
    headless = src / "headless"
    (headless / ".git" / "objects").mkdir(parents=True)
    repos.init("src/.hidden/gamma")
    repos.init("src/web/node_modules/delta")
    return src, {"alpha": alpha, "beta": beta, "worktree": worktree}


def test_finds_checkouts_and_a_linked_worktree_and_omits_stale_or_invalid_markers(tree):
    src, found = tree
    assert discover_checkouts([src]) == sorted(str(path) for path in found.values())


def test_the_result_is_sorted_absolute_paths_each_once_across_overlapping_roots(tree):
    src, found = tree
    result = discover_checkouts([src / "group", src, src])
    assert result == sorted(str(path) for path in found.values())
    assert all(os.path.isabs(path) for path in result)


def test_a_gitdir_file_of_a_submodule_style_checkout_counts_and_a_garbage_one_does_not(repos):
    src = repos.root / "src"
    main = repos.init("src/main")
    moved = src / "moved"
    moved.mkdir()
    # A submodule's `.git` file: a relative `gitdir:` to a git directory elsewhere.
    os.rename(main / ".git", src / "main.git-dir")
    (main / ".git").write_text("gitdir: ../main.git-dir\n")
    (moved / ".git").write_text("not a marker\n")
    garbage = src / "garbage"
    (garbage / ".git").mkdir(parents=True)
    (garbage / ".git" / "HEAD").write_text("nonsense\n")
    (garbage / ".git" / "objects").mkdir()
    assert discover_checkouts([src]) == [str(main)]


def test_the_walk_stops_at_a_checkout_and_finds_no_nested_checkout(repos):
    outer = repos.init("src/outer")
    repos.init("src/outer/vendor/inner")
    assert discover_checkouts([repos.root / "src"]) == [str(outer)]


def test_a_root_that_is_itself_a_checkout_is_found(repos):
    repo = repos.init("src/only")
    assert discover_checkouts([repo]) == [str(repo)]


def test_symlinks_are_not_followed_out_of_the_root(repos):
    outside = repos.init("outside/elsewhere")
    src = repos.root / "src"
    src.mkdir()
    (src / "link-to-outside").symlink_to(outside.parent, target_is_directory=True)
    (src / "link-to-checkout").symlink_to(outside, target_is_directory=True)
    (src / "loop").symlink_to(src, target_is_directory=True)
    assert discover_checkouts([src]) == []
    assert discover_checkouts([repos.root / "outside"]) == [str(outside)]


def test_a_symlinked_git_marker_is_not_a_checkout(repos):
    real = repos.init("elsewhere/real")
    fake = repos.root / "src" / "fake"
    fake.mkdir(parents=True)
    (fake / ".git").symlink_to(real / ".git", target_is_directory=True)
    assert discover_checkouts([repos.root / "src"]) == []


def test_depth_counts_levels_below_the_root(repos):
    deep = repos.init("src/a/b/c/d/deep")  # five levels below src
    src = repos.root / "src"
    assert discover_checkouts([src]) == []
    assert discover_checkouts([src], max_depth=5) == [str(deep)]
    assert discover_checkouts([src / "a"]) == [str(deep)]
    assert discover_checkouts([src], max_depth=0) == []


def test_an_empty_root_is_a_complete_empty_scan(tmp_path):
    (tmp_path / "empty").mkdir()
    assert discover_checkouts([tmp_path / "empty"]) == []


def test_a_missing_root_raises_naming_it(tmp_path):
    with pytest.raises(CheckoutDiscoveryError, match="does not exist") as caught:
        discover_checkouts([tmp_path / "missing"])
    assert caught.value.code == "checkout-discovery-failed"
    assert caught.value.exit_code == ExitCode.FAILURE
    assert str(tmp_path / "missing") in caught.value.message
    assert "checkoutRoots" in caught.value.message


def test_a_root_that_is_a_file_raises(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(CheckoutDiscoveryError, match="is not a directory"):
        discover_checkouts([tmp_path / "file"])


def test_a_relative_root_raises(tmp_path):
    with pytest.raises(CheckoutDiscoveryError, match="not an absolute path"):
        discover_checkouts(["src"])


def deny(monkeypatch, denied: Path) -> None:
    """`os.scandir` of `denied` fails as an unreadable directory does (the tests may run
    as root, who reads everything)."""
    real = os.scandir

    def scandir(path=".", *args, **kwargs):
        if os.fspath(path) == str(denied):
            raise PermissionError(errno.EACCES, "Permission denied", os.fspath(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, "scandir", scandir)


def test_an_unreadable_root_raises(tmp_path, monkeypatch):
    root = tmp_path / "root"
    root.mkdir()
    deny(monkeypatch, root)
    with pytest.raises(CheckoutDiscoveryError, match="cannot read .*Permission denied"):
        discover_checkouts([root])


def test_an_unreadable_directory_below_the_root_fails_the_whole_scan(repos, monkeypatch):
    repos.init("src/alpha")
    locked = repos.root / "src" / "locked"
    locked.mkdir()
    deny(monkeypatch, locked)
    with pytest.raises(CheckoutDiscoveryError, match=f"cannot read {locked} "):
        discover_checkouts([repos.root / "src"])


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a directory of mode 000")
def test_a_really_unreadable_root_raises(tmp_path):
    root = tmp_path / "root"
    root.mkdir(mode=0)
    try:
        with pytest.raises(CheckoutDiscoveryError, match="cannot read"):
            discover_checkouts([root])
    finally:
        root.chmod(0o700)


def test_a_directory_vanishing_during_the_walk_is_skipped(repos, monkeypatch):
    alpha = repos.init("src/alpha")
    gone = repos.root / "src" / "gone"
    gone.mkdir()
    real = os.scandir

    def scandir(path=".", *args, **kwargs):
        if os.fspath(path) == str(gone):
            raise FileNotFoundError(errno.ENOENT, "No such file or directory", os.fspath(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, "scandir", scandir)
    assert discover_checkouts([repos.root / "src"]) == [str(alpha)]


# -- agentctl sync ------------------------------------------------------------------------


@pytest.fixture
def world(tmp_path, repos):
    """The demo Codex home, two checkouts below a configured root, one store."""
    home = make_codex_home(tmp_path / "codex-home", demo_threads())
    src = repos.root / "src"
    checkouts = [repos.init("src/alpha"), repos.init("src/group/beta")]
    config = tmp_path / "config.toml"
    config.write_text(
        f'checkoutRoots = ["{src}"]\n'
        f'[sources.codex]\ndriver = "codex-app-server"\ncodexHome = "{home}"\ncodexBin = "{CODEX_BIN}"\n'
    )
    git_isolation = {name: value for name, value in repos.env.items() if name.startswith("GIT_CONFIG")}
    env = agentctl_env(tmp_path / "state", config, AGENTCTL_STORE=f"sqlite:///{tmp_path / 'fabric.sqlite3'}",
                       AGENTCTL_CLOCK=CLOCK, GIT_CEILING_DIRECTORIES=str(repos.root), **git_isolation)
    return tmp_path, src, checkouts, env


def published_index(tmp_path) -> tuple[int, list[dict], int]:
    """The complete index's generation, checkout rows and session count."""
    did = json.loads((tmp_path / "state" / "identity.json").read_text())["did"]
    store = SQLiteStore(str(tmp_path / "fabric.sqlite3"))
    try:
        parsed = SessionReader(store, did, did).index("all")
        assert parsed is not None
        return parsed.generation, [dict(row) for row in parsed.checkouts], len(parsed.sessions)
    finally:
        store.close()


def discovered(checkouts: list[dict]) -> dict[str, list[str]]:
    """Discovery rows by root (roots as given, since git reports resolved paths)."""
    return {str(Path(row["root"])): row["origins"] for row in checkouts if "discovery" in row["origins"]}


def test_sync_publishes_discovered_checkouts_and_a_later_scan_replaces_them(world, repos):
    tmp_path, src, (alpha, beta), env = world
    alpha, beta = alpha.resolve(), beta.resolve()
    first = run(["sync", "codex"], env)
    assert first.returncode == 0, first.stderr
    generation, checkouts, sessions = published_index(tmp_path)
    assert sessions > 0
    assert discovered(checkouts) == {str(alpha): ["discovery"], str(beta): ["discovery"]}
    row = next(r for r in checkouts if r["root"] == str(alpha))
    assert row["branch"] == "main" and row["commit"] == repos.head(alpha)

    # One checkout fewer (its marker gone stale): the next complete scan removes its row.
    (beta / ".git").rename(beta / "not-git")
    second = run(["sync", "codex"], env)
    assert second.returncode == 0, second.stderr
    later, checkouts, _ = published_index(tmp_path)
    assert later > generation
    assert discovered(checkouts) == {str(alpha): ["discovery"]}


def test_a_sync_whose_root_vanished_fails_and_leaves_the_index_as_it_was(world):
    tmp_path, src, _checkouts, env = world
    assert run(["sync", "codex"], env).returncode == 0
    before = published_index(tmp_path)
    src.rename(src.parent / "moved-away")
    failed = run(["sync", "codex"], env)
    assert failed.returncode == ExitCode.FAILURE
    assert failed.stderr.strip().count("\n") == 0, failed.stderr
    assert f"checkout root {src} does not exist" in failed.stderr
    assert not failed.of("publication")
    assert published_index(tmp_path) == before


def test_without_checkout_roots_a_sync_keeps_the_prior_discovery_rows(world):
    tmp_path, _src, (alpha, beta), env = world
    alpha, beta = alpha.resolve(), beta.resolve()
    assert run(["sync", "codex"], env).returncode == 0
    config = Path(env["AGENTCTL_CONFIG"])
    config.write_text("\n".join(config.read_text().splitlines()[1:]) + "\n")  # drop checkoutRoots
    (beta / ".git").rename(beta / "not-git")
    again = run(["sync", "codex"], env)
    assert again.returncode == 0, again.stderr
    _, checkouts, _ = published_index(tmp_path)
    assert set(discovered(checkouts)) == {str(alpha), str(beta)}


def test_an_empty_scan_removes_every_discovery_row(world):
    tmp_path, src, checkouts, env = world
    assert run(["sync", "codex"], env).returncode == 0
    for checkout in checkouts:
        (checkout / ".git").rename(checkout / "not-git")
    again = run(["sync", "codex"], env)
    assert again.returncode == 0, again.stderr
    assert discovered(published_index(tmp_path)[1]) == {}


def test_the_composed_publish_scans_the_roots_too(world):
    tmp_path, _src, (alpha, beta), env = world
    alpha, beta = alpha.resolve(), beta.resolve()
    *_, published = pipeline([["list", "codex"], ["publish"]], env)
    assert published.returncode == 0, published.stderr
    assert discovered(published_index(tmp_path)[1]) == {str(alpha): ["discovery"], str(beta): ["discovery"]}


def test_a_targeted_refresh_keeps_the_discovery_rows_a_scan_published(tmp_path, repos):
    found = repos.init("src/found")
    target = make_env(tmp_path, GitContextResolver(repos.runner())).target()
    publish(target, descriptor(), [snapshot("s1")], checkout_directories=discover_checkouts([repos.root / "src"]))
    rows_before = index(target)["checkouts"]
    assert [(r["root"], r["origins"]) for r in rows_before] == [(str(found.resolve()), ["discovery"])]
    driver = ScriptedDriver(source_id="codex", kind="codex-app-server", snapshots=[snapshot("s1", messages=3)])
    (found / ".git").rename(found / "not-git")  # a scan now would drop it; a refresh does not scan
    refresh_session(target, driver, "s1")
    assert index(target)["checkouts"] == rows_before
