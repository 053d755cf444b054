"""Fuzzed record streams through the read, prepare and publish stages (in process,
over a real SQLite store; the configured provider cannot start, so reads fail as a
broken provider's do). Whatever the records hold, a stage never raises: every bad
record becomes an `error` record and the stream goes on. `make fuzz` runs more cases
(AGENTCTL_FUZZ_EXAMPLES)."""

from __future__ import annotations

import io
import json
import math
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lib.pipeline.build import prepare_stage, publish_stage, read_stage
from lib.pipeline.driver_pool import DriverPool
from lib.pipeline.records import RECORD_KINDS, JsonLinesSink, stage_inputs
from lib.pipeline.runner import run_stage
from lib.workspace import Workspace

EXAMPLES = int(os.environ.get("AGENTCTL_FUZZ_EXAMPLES", "150"))
FIELDS = ["sourceId", "nativeSessionId", "summary", "snapshot", "source", "observationSequence",
          "observationOrigin", "stage", "code", "message", "key", "chunks", "snapshotHash", "driver",
          "events", "errors", "inventoryComplete", "listedSessionIds", "targeted", "complete"]

leaves = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=8),
    st.sampled_from(["\ud800", "", " ", "codex", "s1", "sha256:00", "read", "list", "start", "prepare"]),
)
values = st.recursive(
    leaves,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(FIELDS + ["title", "updatedAt"]), inner, max_size=4),
    max_leaves=12,
)
summaries = st.fixed_dictionaries({"nativeSessionId": values}, optional={"title": values, "updatedAt": values})
snapshots = st.fixed_dictionaries(
    {"summary": st.one_of(summaries, values), "events": values},
    optional={"normalizedMessages": values, "complete": values},
)


# Each kind's own fields, with a plausible value: a drawn record takes the plausible value
# or a random one field by field, so most records are nearly right and wrong somewhere.
PLAUSIBLE = {
    "source": {"source": st.just({"id": "codex", "driver": "codex-app-server"}),
               "observationSequence": st.integers(1, 9), "observationOrigin": st.just("elsewhere")},
    "summary": {"sourceId": st.just("codex"), "summary": summaries},
    "retained": {"sourceId": st.just("codex"), "summary": summaries},
    "snapshot": {"sourceId": st.just("codex"), "driver": st.just("codex-app-server"), "snapshot": snapshots},
    "prepared": {"sourceId": st.just("codex"), "key": st.just("codex/s1"), "chunks": values},
    "error": {"stage": st.sampled_from(["read", "list", "start", "prepare"]), "sourceId": st.just("codex"),
              "nativeSessionId": st.just("s1"), "code": st.just("read-failed"), "message": st.just("m")},
    "outcome": {"stage": st.sampled_from(["list", "read"]), "sourceId": st.just("codex"),
                "inventoryComplete": st.booleans(), "listedSessionIds": st.just(["s1"]),
                "targeted": st.booleans(), "errors": values},
}


@st.composite
def records(draw):
    kind = draw(st.one_of(st.sampled_from(sorted(RECORD_KINDS)), values))
    record = {"record": kind}
    for name, plausible in PLAUSIBLE.get(kind, {}).items() if isinstance(kind, str) else ():
        record[name] = draw(st.one_of(plausible, plausible, values))
    for name in draw(st.lists(st.sampled_from(FIELDS), max_size=3, unique=True)):
        record[name] = draw(values)
    return record


def _json(record) -> str:
    return json.dumps(record, allow_nan=True)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    tmp: Path = tmp_path_factory.mktemp("fuzz")
    (tmp / "config.toml").write_text(f'[sources.codex]\ndriver = "codex-app-server"\ncodexBin = "{tmp}/no-codex"\n')
    ws = Workspace(state_dir=str(tmp / "state"), config_path=str(tmp / "config.toml"))
    yield ws
    ws.close()


@pytest.mark.parametrize("build", [read_stage, prepare_stage, publish_stage], ids=["read", "prepare", "publish"])
def test_fuzzed_records_never_break_a_stage_and_every_output_line_is_a_record(workspace, build):
    @settings(max_examples=EXAMPLES, derandomize=True, deadline=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(st.lists(records(), min_size=1, max_size=4))
    def run(batch):
        text = "".join(_json(r) + "\n" for r in batch)
        out = io.StringIO()
        sink = JsonLinesSink(out)
        with DriverPool(workspace.create_driver) as drivers:
            stage = build(workspace, drivers)
            run_stage(stage, stage_inputs((), io.StringIO(text), stage.stage, sink), sink)
        # JSON lines end at "\n" only: str.splitlines would also break at a U+0085 or
        # U+2028 inside a string, which JSON writes as it is
        for line in out.getvalue().split("\n")[:-1]:
            record = json.loads(line, parse_constant=lambda c: math.nan)
            assert isinstance(record, dict) and isinstance(record.get("record"), str)

    run()
