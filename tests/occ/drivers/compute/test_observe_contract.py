"""The observation contract (``observe_runtime``, ``read_logs``) on the fake driver, and the log
reader both drivers share (``occ.drivers.compute.logs``): bounds, follow cursors, cut lines,
replaced files, and redaction of a value in every form a program may print it. No database."""

from __future__ import annotations

import json
import os
from urllib.parse import quote

import pytest

from occ.documents import RevisionSpec
from occ.drivers.compute.base import (
    LOG_LINE_CUT,
    LOG_MAX_LINE_CHARS,
    LOG_REDACTED,
    AgentRef,
    ComputeError,
    RevisionContext,
    RevisionRef,
)
from occ.drivers.compute.fake import FAKE_USAGE, FakeCompute, error
from occ.drivers.compute.logs import MIN_WINDOW_BYTES, Redactor, read_log_file
from occ.drivers.secrets.base import SECRET_DRIVERS
from tests.occ.drivers.compute.local_support import MemorySecretDriver, stored_secret

AGENT = AgentRef(id="agt_1", namespace_id="ns_1", name="helper")
CANARY = "sk-canary-observe-7d1e0b"


@pytest.fixture(autouse=True)
def memory_secrets(monkeypatch):
    monkeypatch.setitem(SECRET_DRIVERS.classes, "memory",
                        f"{MemorySecretDriver.__module__}.{MemorySecretDriver.__name__}")
    MemorySecretDriver.values.clear()
    yield MemorySecretDriver.values
    MemorySecretDriver.values.clear()


def rev(number: int) -> RevisionRef:
    return RevisionRef(id=f"rev_{number}", namespace_id="ns_1", agent_id="agt_1", number=number, spec=RevisionSpec())


@pytest.fixture(params=["memory", "file"])
def fake(request, tmp_path) -> FakeCompute:
    """In memory, and durable in a file (what separate web and worker processes share)."""
    return FakeCompute() if request.param == "memory" else FakeCompute(state_file=tmp_path / "fake.json")


# --- the fake ---------------------------------------------------------------------------------------


def test_fake_states_follow_its_world(fake):
    key = stored_secret(CANARY)
    ctx = RevisionContext(harness_auth_method="api_key", harness_secret=key)
    assert fake.observe_runtime(AGENT).state == "stopped"

    fake.script("prepare_revision", "rev_1", ["pending:REVISION_INCOMPLETE"])
    fake.prepare_revision(rev(1), ctx)
    starting = fake.observe_runtime(AGENT)
    fake.prepare_revision(rev(1), ctx)
    fake.activate_revision(rev(1), ctx)
    running = fake.observe_runtime(AGENT)
    fake.crash("agt_1", restarts=2)
    crashed = fake.observe_runtime(AGENT)
    fake.activate_revision(rev(1), ctx)
    fake.stop_revision(rev(1))
    stopped = fake.observe_runtime(AGENT)

    assert starting.state == "starting"
    assert starting.memory_bytes == FAKE_USAGE[0]
    assert (running.state, running.revision_id, running.cpu_percent) == ("running", "rev_1", FAKE_USAGE[1])
    assert running.since is not None
    assert starting.since is not None
    assert running.since >= starting.since
    assert (crashed.state, crashed.restarts, crashed.memory_bytes) == ("crashed", 2, None)
    assert (stopped.state, stopped.revision_id, stopped.memory_bytes) == ("stopped", "rev_1", None)
    assert stopped.since is not None
    assert stopped.since >= crashed.since


def test_fake_observation_is_scriptable(fake):
    fake.script("observe_runtime", "agt_1", [error("KUBERNETES_API_UNAVAILABLE")])
    with pytest.raises(ComputeError) as raised:
        fake.observe_runtime(AGENT)
    assert raised.value.code == "KUBERNETES_API_UNAVAILABLE"
    assert fake.observe_runtime(AGENT).state == "stopped"


def test_fake_logs_redact_follow_and_withhold(fake, memory_secrets):
    key = stored_secret(CANARY)
    ctx = RevisionContext(harness_auth_method="api_key", harness_secret=key)
    fake.prepare_revision(rev(1), ctx)
    fake.activate_revision(rev(1), ctx)
    fake.print_log("agt_1", f"using key {CANARY}\nready")

    page = fake.read_logs(AGENT, secrets=[key])

    assert page.lines[-2:] == (f"using key {LOG_REDACTED}", "ready")
    assert all(CANARY not in line for line in page.lines)
    assert fake.read_logs(AGENT, secrets=[key], cursor=page.cursor).lines == ()
    fake.print_log("agt_1", "later")
    assert fake.read_logs(AGENT, secrets=[key], cursor=page.cursor).lines == ("later",)
    assert fake.read_logs(AGENT, secrets=[key], cursor="nonsense").reset

    memory_secrets.pop(key.backend_name)  # the Secret was deleted: its value cannot be redacted
    gone = fake.read_logs(AGENT, secrets=[key])
    assert gone.lines == ()
    assert gone.withheld >= 3


def test_fake_logs_keep_their_bounds(fake):
    for number in range(30):
        fake.print_log("agt_1", f"line {number}")
    tail = fake.read_logs(AGENT, secrets=[], max_lines=5)
    assert tail.lines == tuple(f"line {n}" for n in range(25, 30))
    assert not tail.skipped
    start = fake.read_logs(AGENT, secrets=[], max_lines=5)
    for number in range(30, 40):
        fake.print_log("agt_1", f"line {number}")
    behind = fake.read_logs(AGENT, secrets=[], cursor=start.cursor, max_lines=4)
    assert behind.lines == tuple(f"line {n}" for n in range(36, 40))
    assert behind.skipped


# --- the shared reader --------------------------------------------------------------------------------


@pytest.mark.parametrize("printed", [
    pytest.param(CANARY, id="raw"),
    pytest.param(json.dumps("pre\"" + CANARY)[1:-1], id="json-escaped"),
    pytest.param(quote(CANARY + "/x", safe=""), id="percent-encoded"),
    pytest.param(f"\x1b[31m{CANARY[:5]}\x1b[0m{CANARY[5:]}", id="split-by-an-escape-sequence"),
])
def test_redactor_catches_the_forms_a_value_is_printed_in(printed):
    redactor = Redactor([CANARY, "pre\"" + CANARY, CANARY + "/x"])
    line = redactor.line(f"token={printed} done".encode())
    assert CANARY not in line
    assert CANARY[5:] not in line
    assert LOG_REDACTED in line
    assert line.endswith(" done")


def test_redactor_redacts_each_line_of_a_multi_line_value():
    pem = "-----BEGIN KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END KEY-----"
    redactor = Redactor([pem])
    assert "MIIEvQIB" not in redactor.line(b"key part MIIEvQIBADANBgkqhkiG9w0BAQEFAASC")


def test_control_characters_are_dropped():
    assert Redactor([]).line(b"a\x07b\x1b[2Kc\x00d\r") == "abcd"


def write(path, text: str | bytes) -> None:
    with open(path, "ab") as handle:
        handle.write(text.encode() if isinstance(text, str) else text)


def test_tail_then_follow_at_line_boundaries(tmp_path):
    log = tmp_path / "gateway.log"
    redactor = Redactor([CANARY])
    write(log, "one\ntwo\nthr")

    first = read_log_file(log, redactor=redactor, cursor=None, max_lines=100, max_bytes=1000)
    assert first.lines == ("one", "two"), "an unfinished line waits for its end"
    write(log, f"ee {CANARY}\nfour\n")
    second = read_log_file(log, redactor=redactor, cursor=first.cursor, max_lines=100, max_bytes=1000)
    assert second.lines == (f"three {LOG_REDACTED}", "four")
    assert read_log_file(log, redactor=redactor, cursor=second.cursor, max_lines=100, max_bytes=1000).lines == ()


def test_a_tail_starts_after_a_whole_line_so_no_value_is_cut_in_half(tmp_path):
    log = tmp_path / "gateway.log"
    filler = "x" * 100
    write(log, "".join(f"{filler} {CANARY}\n" for _ in range(2000)))
    page = read_log_file(log, redactor=Redactor([CANARY]), cursor=None, max_lines=10_000, max_bytes=1)
    assert len(page.lines) < 2000, "the window is bounded"
    assert all(line == f"{filler} {LOG_REDACTED}" for line in page.lines)
    assert sum(len(line) + 1 for line in page.lines) <= MIN_WINDOW_BYTES


def test_a_long_line_is_cut_for_display_after_it_was_redacted_whole(tmp_path):
    log = tmp_path / "gateway.log"
    write(log, "start\n" + "y" * LOG_MAX_LINE_CHARS + CANARY + "\nafter\n")
    page = read_log_file(log, redactor=Redactor([CANARY]), cursor=None, max_lines=100, max_bytes=1)
    assert page.lines[0] == "start"
    assert page.lines[2] == "after"
    assert page.lines[1] == "y" * LOG_MAX_LINE_CHARS + LOG_LINE_CUT


def test_a_line_longer_than_the_window_is_never_returned_in_part(tmp_path):
    log = tmp_path / "gateway.log"
    redactor = Redactor([CANARY])
    write(log, "start\n")
    first = read_log_file(log, redactor=redactor, cursor=None, max_lines=100, max_bytes=1)
    write(log, CANARY[:6] + "y" * (2 * MIN_WINDOW_BYTES) + CANARY[6:])
    middle = read_log_file(log, redactor=redactor, cursor=first.cursor, max_lines=100, max_bytes=1)
    write(log, CANARY + "\nafter\n")
    last = read_log_file(log, redactor=redactor, cursor=middle.cursor, max_lines=100, max_bytes=1)
    assert (middle.lines, middle.skipped) == ((), True)
    assert last.lines == ("after",), "the rest of the giant line is skipped, never started inside"
    tail = read_log_file(log, redactor=redactor, cursor=None, max_lines=100, max_bytes=1)
    assert tail.lines == ("after",)


def test_a_replaced_log_resets_the_cursor(tmp_path):
    log = tmp_path / "gateway.log"
    write(log, "old\n")
    page = read_log_file(log, redactor=Redactor([]), cursor=None, max_lines=10, max_bytes=1000)
    replacement = tmp_path / "new.log"
    write(replacement, "new\n")
    os.replace(replacement, log)
    again = read_log_file(log, redactor=Redactor([]), cursor=page.cursor, max_lines=10, max_bytes=1000)
    assert (again.lines, again.reset) == (("new",), True)


def test_a_log_that_does_not_exist_yet_is_followed_from_its_start(tmp_path):
    log = tmp_path / "gateway.log"
    empty = read_log_file(log, redactor=Redactor([]), cursor=None, max_lines=10, max_bytes=1000)
    assert empty.lines == ()
    write(log, "first\n")
    page = read_log_file(log, redactor=Redactor([]), cursor=empty.cursor, max_lines=10, max_bytes=1000)
    assert (page.lines, page.reset) == (("first",), False)


def test_following_too_far_behind_skips_to_the_newest(tmp_path):
    log = tmp_path / "gateway.log"
    write(log, "a\n")
    page = read_log_file(log, redactor=Redactor([]), cursor=None, max_lines=10, max_bytes=1000)
    write(log, "".join(f"line {n}\n" for n in range(50)))
    behind = read_log_file(log, redactor=Redactor([]), cursor=page.cursor, max_lines=3, max_bytes=1000)
    assert (behind.lines, behind.skipped) == (("line 47", "line 48", "line 49"), True)
