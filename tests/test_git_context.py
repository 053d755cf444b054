"""GitContextResolver against real git and real repositories in temporary directories."""

from __future__ import annotations

import os
import stat
from datetime import UTC, datetime
from pathlib import Path

import pytest

from lib.git_context import (
    GitContextResolver,
    GitMetadata,
    GitRemote,
    GitResult,
    SubprocessGitRunner,
    iso_timestamp,
)
from lib.types import SessionSummary
from tests.support.git_repos import GitRepos, RecordingRunner

OBSERVED = datetime(2025, 3, 4, 5, 6, 7, 891234, tzinfo=UTC)
SPEC_COMMANDS = [
    ("rev-parse", "--show-toplevel"),
    ("branch", "--show-current"),
    ("remote", "get-url", "upstream"),
    ("remote", "get-url", "origin"),
    ("rev-parse", "HEAD"),
    ("remote", "-v"),
]


@pytest.fixture
def repos(tmp_path: Path) -> GitRepos:
    return GitRepos(tmp_path)


@pytest.fixture
def recording(repos: GitRepos) -> RecordingRunner:
    return RecordingRunner(repos.runner())


@pytest.fixture
def resolver(recording: RecordingRunner) -> GitContextResolver:
    return GitContextResolver(recording, clock=lambda: OBSERVED)


# --- what one resolution returns ---------------------------------------------------


def test_a_repository_directory_yields_everything_a_checkout_row_needs(repos, resolver):
    repo = repos.init("project", branch="trunk")
    commit = repos.head(repo)
    repos.git(repo, "remote", "add", "origin", "https://github.com/acme/project.git")

    metadata = resolver.resolve(repo)

    assert metadata == GitMetadata(
        worktree_root=str(repo),
        branch="trunk",
        commit=commit,
        repo="https://github.com/acme/project.git",
        remotes=(
            GitRemote(
                name="origin",
                url="https://github.com/acme/project.git",
                directions=("fetch", "push"),
            ),
        ),
        observed_at="2025-03-04T05:06:07.891Z",
    )


def test_metadata_is_written_with_the_spec_camel_case_names(repos, resolver):
    repo = repos.init("project")
    repos.git(repo, "remote", "add", "origin", "git@github.com:acme/project.git")

    wire = resolver.resolve(repo).to_wire()

    assert wire == {
        "worktreeRoot": str(repo),
        "branch": "main",
        "commit": repos.head(repo),
        "repo": "github.com:acme/project.git",
        "remotes": [
            {"name": "origin", "url": "github.com:acme/project.git", "directions": ["fetch", "push"]}
        ],
        "observedAt": "2025-03-04T05:06:07.891Z",
    }
    assert GitMetadata.model_validate(wire) == resolver.resolve(repo)


def test_a_subdirectory_resolves_to_its_worktree_root(repos, resolver):
    repo = repos.init("project")
    nested = repo / "src" / "pkg"
    nested.mkdir(parents=True)

    assert resolver.resolve(nested).worktree_root == str(repo)


def test_the_six_spec_commands_run_in_order_against_the_working_directory(
    repos, resolver, recording
):
    repo = repos.init("project")

    resolver.resolve(repo)

    assert recording.commands() == SPEC_COMMANDS
    assert {tuple(call[:2]) for call in recording.calls} == {("-C", str(repo))}


def test_upstream_is_preferred_over_origin_and_origin_is_then_not_queried(
    repos, resolver, recording
):
    repo = repos.init("fork")
    repos.git(repo, "remote", "add", "origin", "https://github.com/me/fork.git")
    repos.git(repo, "remote", "add", "upstream", "https://github.com/acme/project.git")

    metadata = resolver.resolve(repo)

    assert metadata.repo == "https://github.com/acme/project.git"
    assert ("remote", "get-url", "origin") not in recording.commands()
    assert [remote.name for remote in metadata.remotes] == ["origin", "upstream"]


def test_origin_is_the_repository_when_there_is_no_upstream(repos, resolver):
    repo = repos.init("project")
    repos.git(repo, "remote", "add", "origin", "ssh://git@example.com:2222/acme/project.git")
    repos.git(repo, "remote", "add", "mirror", "https://mirror.example.com/project.git")

    assert resolver.resolve(repo).repo == "ssh://example.com:2222/acme/project.git"


def test_a_repository_without_remotes_has_no_repository_url(repos, resolver):
    repo = repos.init("local-only")

    metadata = resolver.resolve(repo)

    assert (metadata.repo, metadata.remotes) == (None, ())
    assert metadata.commit == repos.head(repo)


def test_a_detached_head_has_no_branch_but_keeps_its_commit(repos, resolver):
    repo = repos.init("project")
    first = repos.head(repo)
    repos.commit(repo, "second")
    repos.git(repo, "checkout", "--quiet", "--detach", first)

    metadata = resolver.resolve(repo)

    assert (metadata.branch, metadata.commit) == (None, first)


def test_a_repository_without_commits_has_a_branch_but_no_commit(repos, resolver):
    repo = repos.init("empty", branch="start", commit=False)

    metadata = resolver.resolve(repo)

    assert (metadata.worktree_root, metadata.branch, metadata.commit) == (str(repo), "start", None)


def test_a_linked_worktree_is_its_own_checkout_with_its_own_branch(repos, resolver):
    repo = repos.init("project")
    repos.git(repo, "remote", "add", "origin", "https://github.com/acme/project.git")
    linked = repos.root / "project-feature"
    repos.git(repo, "worktree", "add", "--quiet", "-b", "feature", str(linked))
    feature_commit = repos.commit(linked, "feature work")

    observation = resolver.begin_observation()
    main_metadata = observation.resolve(repo)
    linked_metadata = observation.resolve(linked)

    assert (linked_metadata.worktree_root, linked_metadata.branch) == (str(linked), "feature")
    assert linked_metadata.commit == feature_commit != main_metadata.commit
    assert (main_metadata.worktree_root, main_metadata.branch) == (str(repo), "main")
    assert linked_metadata.repo == main_metadata.repo == "https://github.com/acme/project.git"


# --- sharing within one observation ---------------------------------------------------


def test_equal_working_directories_share_one_lookup_within_an_observation(
    repos, resolver, recording
):
    repo = repos.init("project")
    alias = repos.root / "alias"
    alias.symlink_to(repo, target_is_directory=True)

    observation = resolver.begin_observation()
    results = [
        observation.resolve(repo),
        observation.resolve(f"{repo}/"),
        observation.resolve(repo / "." / ".." / "project"),
        observation.resolve(alias),
    ]

    assert len(recording.calls) == len(SPEC_COMMANDS)
    assert all(result == results[0] for result in results)


def test_directories_sharing_a_repository_root_cost_only_one_more_toplevel_lookup(
    repos, resolver, recording
):
    repo = repos.init("project")
    (repo / "docs").mkdir()
    (repo / "src").mkdir()

    observation = resolver.begin_observation()
    first = observation.resolve(repo / "docs")
    second = observation.resolve(repo / "src")
    third = observation.resolve(repo)

    assert first == second == third
    assert recording.commands() == SPEC_COMMANDS + [("rev-parse", "--show-toplevel")] * 2


def test_a_new_observation_reruns_the_commands_and_sees_a_branch_change(
    repos, resolver, recording
):
    repo = repos.init("project")
    first = resolver.begin_observation()
    assert first.resolve(repo).branch == "main"

    repos.git(repo, "switch", "--quiet", "-c", "topic")

    assert first.resolve(repo).branch == "main"
    assert resolver.begin_observation().resolve(repo).branch == "topic"
    assert len(recording.calls) == 2 * len(SPEC_COMMANDS)


def test_direct_resolve_calls_each_use_a_fresh_observation(repos, resolver, recording):
    repo = repos.init("project")

    resolver.resolve(repo)
    repos.git(repo, "remote", "add", "origin", "https://example.com/new.git")
    later = resolver.resolve(repo)

    assert later.repo == "https://example.com/new.git"
    assert len(recording.calls) == 2 * len(SPEC_COMMANDS)


def test_a_failed_lookup_is_cached_only_within_one_observation(repos, resolver, recording):
    directory = repos.root / "not-yet"
    directory.mkdir()
    observation = resolver.begin_observation()
    assert observation.resolve(directory) is None

    repos.git(directory, "init", "--quiet", "--initial-branch", "main")

    assert observation.resolve(directory) is None
    assert recording.commands() == [("rev-parse", "--show-toplevel")]
    later = resolver.begin_observation().resolve(directory)
    assert (later.worktree_root, later.branch) == (str(directory), "main")


# --- no metadata, never an exception --------------------------------------------------


def test_a_missing_directory_gives_no_metadata(repos, resolver):
    assert resolver.resolve(repos.root / "gone") is None


def test_a_directory_outside_any_repository_gives_no_metadata(repos, resolver):
    plain = repos.root / "plain"
    plain.mkdir()

    assert resolver.resolve(plain) is None


def test_a_session_without_a_working_directory_runs_no_git(resolver, recording):
    assert resolver.resolve(None) is None
    assert resolver.resolve("") is None
    assert recording.calls == []


def test_a_relative_or_blank_directory_names_no_checkout_even_inside_one(repos, resolver, recording, monkeypatch):
    """`.` would otherwise resolve against agentctl's own working directory, and
    whatever checkout agentctl runs in would be published as the session's."""
    repo = repos.init("project")
    monkeypatch.chdir(repo)
    for cwd in (".", "src", "./", "   "):
        assert resolver.resolve(cwd) is None
    assert recording.calls == []
    assert resolver.resolve(str(repo)) is not None


def test_a_missing_git_binary_gives_no_metadata_instead_of_an_error(repos, tmp_path):
    repo = repos.init("project")
    runner = SubprocessGitRunner(executable=str(tmp_path / "no-such-git"), env=repos.env)

    assert runner(["-C", str(repo), "rev-parse", "--show-toplevel"]) == GitResult(127, "")
    assert GitContextResolver(runner).resolve(repo) is None


def test_a_failing_git_process_gives_no_metadata(repos):
    repo = repos.init("project")
    failing = SubprocessGitRunner(executable="false", env=repos.env)

    assert GitContextResolver(failing).resolve(repo) is None


def test_a_git_process_that_never_finishes_is_stopped_and_counts_as_a_failure(repos, tmp_path):
    repo = repos.init("project")
    hanging = tmp_path / "hanging-git"
    hanging.write_text("#!/bin/sh\nexec tail -f /dev/null\n")
    hanging.chmod(hanging.stat().st_mode | stat.S_IXUSR)
    runner = SubprocessGitRunner(executable=str(hanging), env=repos.env, timeout=0.2)

    assert GitContextResolver(runner).resolve(repo) is None


def test_an_exception_from_an_injected_fake_runner_gives_no_metadata(repos):
    repo = repos.init("project")

    def broken(args: list[str]) -> GitResult:
        raise RuntimeError("boom")

    assert GitContextResolver(broken).resolve(repo) is None


def test_the_default_runner_ignores_repository_variables_that_would_override_the_directory(
    repos,
):
    repo = repos.init("project")
    other = repos.init("other")
    env = dict(repos.env, GIT_DIR=str(other / ".git"), GIT_WORK_TREE=str(other))

    metadata = GitContextResolver(SubprocessGitRunner(env=env)).resolve(repo)

    assert metadata.worktree_root == str(repo)


def test_the_default_runner_never_prompts_and_speaks_the_c_locale():
    env = SubprocessGitRunner(env={"PATH": os.environ["PATH"], "LC_ALL": "de_DE.UTF-8"}).env

    assert (env["GIT_TERMINAL_PROMPT"], env["LC_ALL"]) == ("0", "C")


# --- remotes ----------------------------------------------------------------------------


def test_credentials_queries_and_fragments_are_removed_before_publication(repos, resolver):
    repo = repos.init("project")
    repos.git(
        repo, "remote", "add", "origin",
        "https://alice:hunter2@git.example.com/acme/project.git?token=s3cr3t#readme",
    )

    metadata = resolver.resolve(repo)
    wire = metadata.model_dump_json(by_alias=True)

    assert metadata.repo == "https://git.example.com/acme/project.git"
    assert metadata.remotes == (
        GitRemote(
            name="origin",
            url="https://git.example.com/acme/project.git",
            directions=("fetch", "push"),
        ),
    )
    for secret in ("alice", "hunter2", "token", "s3cr3t", "readme"):
        assert secret not in wire


def test_fetch_and_push_forms_that_sanitize_alike_become_one_entry(repos, resolver):
    repo = repos.init("project")
    repos.git(repo, "remote", "add", "origin", "https://token@example.com/p.git")
    repos.git(repo, "remote", "set-url", "--push", "origin", "https://example.com/p.git")

    assert resolver.resolve(repo).remotes == (
        GitRemote(name="origin", url="https://example.com/p.git", directions=("fetch", "push")),
    )


def test_a_distinct_push_url_is_listed_as_its_own_push_remote(repos, resolver):
    repo = repos.init("project")
    repos.git(repo, "remote", "add", "origin", "https://example.com/p.git")
    repos.git(repo, "remote", "set-url", "--push", "origin", "git@example.com:p.git")
    repos.git(repo, "remote", "set-url", "--add", "--push", "origin", "git@backup.example.com:p.git")

    assert resolver.resolve(repo).remotes == (
        GitRemote(name="origin", url="https://example.com/p.git", directions=("fetch",)),
        GitRemote(name="origin", url="example.com:p.git", directions=("push",)),
        GitRemote(name="origin", url="backup.example.com:p.git", directions=("push",)),
    )


def test_the_same_url_under_two_remote_names_stays_two_remotes(repos, resolver):
    repo = repos.init("project")
    repos.git(repo, "remote", "add", "origin", "https://example.com/p.git")
    repos.git(repo, "remote", "add", "upstream", "https://example.com/p.git")

    assert [(r.name, r.url) for r in resolver.resolve(repo).remotes] == [
        ("origin", "https://example.com/p.git"),
        ("upstream", "https://example.com/p.git"),
    ]


def test_local_path_and_remote_helper_remotes_are_omitted(repos, resolver):
    repo = repos.init("project")
    repos.git(repo, "remote", "add", "upstream", str(repos.root / "elsewhere.git"))
    repos.git(repo, "remote", "add", "origin", "https://example.com/p.git")
    repos.git(repo, "remote", "add", "relative", "../sibling")
    repos.git(repo, "remote", "add", "viafile", "file:///srv/git/p.git")
    repos.git(repo, "remote", "add", "helper", "persistent-https::https://example.com/p")
    repos.git(repo, "remote", "add", "command", "ext::ssh -i key example.com %S p.git")

    metadata = resolver.resolve(repo)

    # upstream exists, so origin is not consulted: the selected remote is simply unpublishable.
    assert metadata.repo is None
    assert [remote.name for remote in metadata.remotes] == ["origin"]


def test_a_partial_clone_filter_in_the_listing_does_not_hide_the_fetch_remote(repos, resolver):
    repo = repos.init("project")
    repos.git(repo, "remote", "add", "origin", "https://example.com/p.git")
    repos.git(repo, "config", "remote.origin.partialclonefilter", "blob:none")
    assert "(fetch) [blob:none]" in repos.git(repo, "remote", "-v")

    assert resolver.resolve(repo).remotes == (
        GitRemote(name="origin", url="https://example.com/p.git", directions=("fetch", "push")),
    )


# --- enriching sessions ---------------------------------------------------------------


def test_enrich_fills_repo_branch_and_worktree_root_on_a_copy(repos, resolver):
    repo = repos.init("project", branch="dev")
    repos.git(repo, "remote", "add", "origin", "git@github.com:acme/project.git")
    summary = SessionSummary(native_session_id="s1", cwd=str(repo / "."), title="t")

    enriched = resolver.enrich(summary)

    assert (enriched.git_repo, enriched.git_branch, enriched.git_worktree_root) == (
        "github.com:acme/project.git",
        "dev",
        str(repo),
    )
    assert (enriched.native_session_id, enriched.title) == ("s1", "t")
    assert summary.git_repo is None


def test_observed_metadata_replaces_what_the_provider_reported(repos, resolver):
    repo = repos.init("project")
    repos.git(repo, "checkout", "--quiet", "--detach")
    summary = SessionSummary(
        native_session_id="s1", cwd=str(repo), git_branch="old", git_repo="https://old/x"
    )

    enriched = resolver.enrich(summary)

    assert (enriched.git_branch, enriched.git_repo) == (None, None)


def test_without_metadata_enrich_leaves_the_summary_as_it_was(repos, resolver):
    plain = repos.root / "plain"
    plain.mkdir()
    summary = SessionSummary(
        native_session_id="s1", cwd=str(plain), git_repo="r", git_branch="b", git_worktree_root="w"
    )

    assert resolver.enrich(summary) == summary
    assert resolver.enrich(SessionSummary(native_session_id="s2")) == SessionSummary(
        native_session_id="s2"
    )


def test_sessions_enriched_in_one_observation_share_the_lookup(repos, resolver, recording):
    repo = repos.init("project")
    observation = resolver.begin_observation()

    for index in range(3):
        observation.enrich(SessionSummary(native_session_id=f"s{index}", cwd=str(repo)))

    assert len(recording.calls) == len(SPEC_COMMANDS)


def test_observation_time_uses_the_javascript_iso_form():
    assert iso_timestamp(datetime(2025, 1, 2, 3, 4, 5, 6000, tzinfo=UTC)) == (
        "2025-01-02T03:04:05.006Z"
    )
