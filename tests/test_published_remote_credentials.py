"""Credentials planted in a checkout's remotes never reach the store nor what `sessions`
and `show` print: real git, the real Codex app server, real `agentctl sync`, real SQLite.

Codex itself records the origin URL of a session's checkout (its `gitInfo`), so the
planted origin also comes back in the thread Codex lists, as it would for a real session.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tests.support.cli import CODEX_BIN, agentctl_env, run
from tests.support.codex_home import FixtureThread, FixtureTurn, make_codex_home, uuid7_like
from tests.support.git_repos import GitRepos

PLANTED = ("ghp_PLANTEDTOKEN123", "s3cretPW", "ghs_PLANTEDPUSH", "PLANTEDQUERY", "PLANTEDFRAG", "deployuser")
REMOTES = {
    "origin": "user:s3cretPW@host.example:repo.git",
    "token": "ghp_PLANTEDTOKEN123@github.com:acme/x.git",
    "mirror": "https://user:s3cretPW@mirror.example/x.git?private_token=PLANTEDQUERY#PLANTEDFRAG",
    "login": "deployuser@[2001:db8::1]:acme/y.git",
}
PUSH_URL = "https://x-access-token:ghs_PLANTEDPUSH@github.com/acme/x.git"
PUBLISHED = ("host.example:repo.git", "github.com:acme/x.git", "https://mirror.example/x.git",
             "[2001:db8::1]:acme/y.git", "https://github.com/acme/x.git")


@pytest.fixture
def planted(tmp_path):
    """A checkout whose remotes carry secrets, one Codex session in it, synced once."""
    repos = GitRepos(tmp_path / "git")
    repo = repos.init("project")
    for name, url in REMOTES.items():
        repos.git(repo, "remote", "add", name, url)
    repos.git(repo, "remote", "set-url", "--push", "token", PUSH_URL)
    when = datetime(2026, 2, 10, 14, 0, tzinfo=UTC)
    thread = FixtureThread(
        id=uuid7_like(1, when), created_at=when, cwd=str(repo),
        turns=(FixtureTurn(id=uuid7_like(2, when), user="Why is CI red?", agent="A flaky test."),),
        extra_meta={"git": {"commit_hash": repos.head(repo), "branch": "main",
                            "repository_url": REMOTES["origin"]}},
    )
    home = make_codex_home(tmp_path / "codex-home", [thread])
    config = tmp_path / "config.toml"
    config.write_text(f'[sources.codex]\ndriver = "codex-app-server"\ncodexHome = "{home}"\ncodexBin = "{CODEX_BIN}"\n')
    git_isolation = {name: value for name, value in repos.env.items() if name.startswith("GIT_CONFIG")}
    env = agentctl_env(tmp_path / "state", config, AGENTCTL_STORE=f"sqlite:///{tmp_path / 'fabric.sqlite3'}",
                       GIT_CEILING_DIRECTORIES=str(repos.root), **git_isolation)
    synced = run(["sync", "codex"], env)
    assert synced.returncode == 0, synced.stderr
    return tmp_path, env, f"codex/{thread.id}", synced


def store_bytes(tmp_path) -> bytes:
    """The store as it lies on disk after every agentctl process ended: the database file
    and whatever its write-ahead log still holds."""
    found = sorted(tmp_path.glob("fabric.sqlite3*"))
    files = [path for path in found if path.is_file()]
    files += [path for folder in found if folder.is_dir() for path in sorted(folder.rglob("*")) if path.is_file()]
    assert tmp_path / "fabric.sqlite3" in files
    return b"".join(path.read_bytes() for path in files)


def assert_no_planted_secret(text: str | bytes, where: str) -> None:
    for secret in PLANTED:
        needle = secret.encode() if isinstance(text, bytes) else secret
        assert needle not in text, f"{secret} reached {where}"


def test_planted_remote_credentials_never_reach_the_store_sessions_or_show(planted):
    tmp_path, env, key, synced = planted
    sessions = run(["sessions", "--json"], env)
    manifest = run(["show", key, "--json"], env)
    events = run(["show", key, "--events"], env)
    for done in (sessions, manifest, events):
        assert done.returncode == 0, done.stderr

    row = sessions.of("session")[0]
    assert (row["key"], row["gitRepo"]) == (key, "host.example:repo.git")
    stored = store_bytes(tmp_path)
    for url in PUBLISHED:  # the remotes were observed and published, minus their secrets
        assert url.encode() in stored
    for where, text in (("the store", stored), ("sync's output", synced.stdout + synced.stderr),
                        ("sessions", sessions.stdout), ("show", manifest.stdout), ("show --events", events.stdout)):
        assert_no_planted_secret(text, where)
