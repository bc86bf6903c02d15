"""A deterministic, scriptable ComputeDriver for tests and benchmarks. Never for production.

It keeps a small "world" (which Namespaces exist, which gateway serves which revision,
which revisions are staged, whose runtime credentials exist) and records every call in
order. By default every call succeeds at once; a test scripts the next outcomes of one
method for one target (a revision, Agent or Namespace id, or ``"*"`` for any):

    fake.script("prepare_revision", revision.id, [pending(), pending(), OK])
    fake.script("activate_revision", revision.id, [error("AGENT_GATEWAY_UNAVAILABLE")])
    fake.script("retire_revision", "*", [LOST])          # commit, then lose the response

Steps: ``OK``; ``pending(code)`` (prepare/activate report not ready, ensure/delete report not
done; the effect is applied as a start, for other methods it is plain success);
``error(code)`` / ``error(code, retryable=False)`` (a ComputeError, nothing done);
``RAISE`` (an unexpected exception, nothing done); ``LOST`` (the effect is applied, then
ComputeUnknownOutcome); ``DROPPED`` (nothing done, then ComputeUnknownOutcome: the request
never arrived); ``sleep(seconds)`` (wait, then behave as ``OK``: lets a fault test kill a
worker inside a driver call).

With ``state_file`` the world lives in one JSON file guarded by an exclusive file lock, so
separate worker processes share it and a worker started after a crash sees what the dead one
made; the selection (``get_compute_driver``) gives it ``fake-compute.json`` under the data
directory unless ``OCC_FAKE_COMPUTE_STATE=memory``. Without a file it lives in process memory
(the in-process tests, which reset it per test).
Steps are plain strings so a script survives that JSON round trip.

One module of ~600 lines: the scripting vocabulary, the world and every method of the
ComputeDriver contract, which a test reads together; each method is a few lines over ``_call``.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from occ.documents import RevisionSpec
from occ.drivers.compute.base import (
    CHAT_GATEWAY_NOT_RUNNING,
    LOG_MAX_BYTES,
    LOG_MAX_LINES,
    AgentRef,
    CandidateVerdict,
    ChatMessage,
    ComputeDriver,
    ComputeError,
    ComputeUnknownOutcome,
    CredentialObservation,
    DiagnosticCheck,
    LogPage,
    NamespaceRef,
    NamespaceResult,
    Readiness,
    RevisionContext,
    RevisionRef,
    RuntimeObservation,
    SecretReference,
    SmokeConversation,
    now_text,
)
from occ.drivers.compute.gateway_rpc import GatewayOperator, GatewayRpcError
from occ.drivers.compute.logs import Redactor, with_redactor
from occ.drivers.secrets import get_secret_driver

T = TypeVar("T")
State = dict[str, Any]

OK = "ok"
RAISE = "raise"
LOST = "lost"
DROPPED = "dropped"
ANY = "*"
MAX_SLEEP_SECONDS = 600.0
SUPPORTED_HARNESS_METHODS = frozenset({"api_key"})
# What the fake gateway answers a chat with (before the person's last message, echoed).
FAKE_CHAT_REPLY = "Fake gateway here. You said:"
# What the fake gateway's process tree "uses" unless a test sets it: resident bytes, CPU percent.
FAKE_USAGE = (256 * 1024 * 1024, 1.5)
MAX_FAKE_LOG_LINES = 2000
FAKE_CURSOR = "fake"


def pending(code: str = "REVISION_INCOMPLETE") -> str:
    return f"pending:{code}"


def error(code: str = "FAKE_COMPUTE_FAILURE", *, retryable: bool = True) -> str:
    return f"{'error' if retryable else 'fatal'}:{code}"


def sleep(seconds: float) -> str:
    return f"sleep:{seconds}"


class ScriptedCrash(RuntimeError):
    """The unexpected exception a ``RAISE`` step throws."""


@dataclass(frozen=True)
class Call:
    method: str
    target: str


def _empty_state() -> State:
    # credential_owners: Agent id -> the Agent that owns its credentials, when planted by a
    # test as someone else's (by default an Agent owns its own).
    return {"scripts": {}, "calls": [], "namespaces": {}, "gateways": {}, "credentials": [],
            "credential_owners": {}, "refusals": {}}


class _MemoryStore:
    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._state = _empty_state()

    @contextlib.contextmanager
    def edit(self) -> Iterator[State]:
        with self._lock:
            yield self._state

    def reset(self) -> None:
        with self._lock:
            self._state = _empty_state()


class _FileStore:
    """One JSON document; every read-modify-write holds an exclusive lock on a side file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock_path = path.with_name(path.name + ".lock")
        path.parent.mkdir(parents=True, exist_ok=True)

    @contextlib.contextmanager
    def edit(self) -> Iterator[State]:
        with open(self._lock_path, "a+") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                state = json.loads(self.path.read_text()) if self.path.exists() else _empty_state()
                yield state
                temporary = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
                temporary.write_text(json.dumps(state))
                os.replace(temporary, self.path)
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def reset(self) -> None:
        with self.edit() as state:
            state.clear()
            state.update(_empty_state())


def _gateway(state: State, agent_id: str) -> dict[str, Any]:
    gateway = state["gateways"].setdefault(
        agent_id, {"running": False, "serving": None, "staged": [], "starts": 0, "workspace_files": []}
    )
    # What observe_runtime and read_logs report (added to worlds written before they existed).
    for key, value in (("ready", False), ("crashed", False), ("since", None), ("restarts", 0), ("log", []),
                       ("log_base", 0), ("delivered", []), ("usage", list(FAKE_USAGE))):
        gateway.setdefault(key, value)
    return gateway


def _delivered(context: RevisionContext) -> list[str]:
    """The ids of the Secrets a start hands the fake gateway (never their values)."""
    references = [context.harness_secret, context.gateway_password, *context.secret_environment.values()]
    return sorted({reference.secret_id for reference in references if reference is not None})


def _transition(gateway: dict[str, Any], *, running: bool, line: str, ready: bool = True) -> None:
    """The fake gateway starts or stops: its state's since-when moves and it logs a line."""
    gateway["running"], gateway["ready"], gateway["crashed"] = running, running and ready, False
    gateway["since"] = now_text()
    _log(gateway, line)


def _log(gateway: dict[str, Any], text: str) -> None:
    """Append one line the fake gateway "printed" (kept with the Secrets it held then)."""
    gateway["log"].append([text, list(gateway["delivered"])])
    overflow = len(gateway["log"]) - MAX_FAKE_LOG_LINES
    if overflow > 0:
        del gateway["log"][:overflow]
        gateway["log_base"] += overflow


class FakeCompute(ComputeDriver):
    driver_id = "fake"
    implementation = "fake"

    def __init__(self, state_file: Path | str | None = None) -> None:
        self._store: _MemoryStore | _FileStore = _FileStore(Path(state_file)) if state_file else _MemoryStore()

    # --- the test surface -------------------------------------------------------------------
    def script(self, method: str, target: str, steps: list[str]) -> None:
        """Queue the next outcomes of ``method`` for ``target`` (after any already queued)."""
        if not hasattr(ComputeDriver, method):
            raise ValueError(f"{method} is not a ComputeDriver method")
        for step in steps:
            _parse(step)  # refuse a malformed script now, not in the middle of a job
        with self._store.edit() as state:
            state["scripts"].setdefault(f"{method}|{target}", []).extend(steps)

    def reset(self) -> None:
        self._store.reset()

    def clear_calls(self) -> None:
        """Forget the recorded calls (e.g. the admission's ``validate_harness_auth``)."""
        with self._store.edit() as state:
            state["calls"] = []

    @property
    def calls(self) -> list[Call]:
        with self._store.edit() as state:
            return [Call(method, target) for method, target in state["calls"]]

    def calls_to(self, method: str) -> list[str]:
        return [call.target for call in self.calls if call.method == method]

    def plant_credentials(self, agent_id: str, *, owner: str) -> None:
        """Make credentials exist under ``agent_id``'s name that ``owner`` owns (a collision)."""
        with self._store.edit() as state:
            if agent_id not in state["credentials"]:
                state["credentials"].append(agent_id)
            state.setdefault("credential_owners", {})[agent_id] = owner

    def serve_gateway_at(self, agent_id: str, url: str) -> None:
        """``operator_call`` on ``agent_id``'s revisions reaches ``url`` (a loopback stand-in of
        the gateway's RPC, real WebSockets), whatever the fake gateway's own state."""
        with self._store.edit() as state:
            state.setdefault("endpoints", {})[agent_id] = url

    def print_log(self, agent_id: str, text: str) -> None:
        """The fake gateway prints ``text`` (one line per line of it) to its log."""
        with self._store.edit() as state:
            gateway = _gateway(state, agent_id)
            for line in text.splitlines() or [""]:
                _log(gateway, line)

    def refuse_candidate(self, target: str, code: str, *, check: str, evidence: Sequence[str] = ()) -> None:
        """The next ``verify_candidate`` of revision ``target`` (or ``*``: any) fails with
        ``code``; ``evidence`` lines are what the fake candidate printed (redacted on return)."""
        with self._store.edit() as state:
            state.setdefault("refusals", {})[target] = {"code": code, "check": check, "evidence": list(evidence)}

    def smoke_prompts(self, agent_id: str) -> list[str]:
        """The prompts of the smoke conversations the last ``verify_candidate`` of the Agent was given."""
        gateway = self.gateway(agent_id)
        return [] if gateway is None else list(gateway.get("smoke_prompts", []))

    def crash(self, agent_id: str, *, restarts: int = 0) -> None:
        """The fake gateway dies (``crashed`` until the next start), after ``restarts`` restarts."""
        with self._store.edit() as state:
            gateway = _gateway(state, agent_id)
            gateway["running"], gateway["ready"], gateway["crashed"] = False, False, True
            gateway["since"], gateway["restarts"] = now_text(), gateway["restarts"] + restarts
            _log(gateway, "gateway exited unexpectedly")

    def set_usage(self, agent_id: str, *, memory_bytes: int | None, cpu_percent: float | None) -> None:
        """``None``: not measurable while running (a cluster without a metrics API)."""
        with self._store.edit() as state:
            _gateway(state, agent_id)["usage"] = [memory_bytes, cpu_percent]

    def world(self) -> State:
        """A copy of the world, for assertions."""
        with self._store.edit() as state:
            return json.loads(json.dumps({k: v for k, v in state.items() if k not in ("scripts", "calls")}))

    def gateway(self, agent_id: str) -> dict[str, Any] | None:
        return self.world()["gateways"].get(agent_id)

    def serving(self, agent_id: str) -> str | None:
        gateway = self.gateway(agent_id)
        return None if gateway is None else gateway["serving"]

    # --- the engine -------------------------------------------------------------------------
    def _call(self, method: str, target: str, effect: Callable[[State, str | None], T]) -> T:
        """Record the call, take the next scripted step, then apply ``effect``.

        ``effect(state, pending_code)`` gets a code when the step is ``pending``.
        """
        with self._store.edit() as state:
            state["calls"].append([method, target])
            step = self._next_step(state, method, target)
        kind, argument = _parse(step)
        if kind == "sleep":
            time.sleep(min(float(argument), MAX_SLEEP_SECONDS))
        elif kind == "error":
            raise ComputeError(argument, retryable=True)
        elif kind == "fatal":
            raise ComputeError(argument, retryable=False)
        elif kind == "raise":
            raise ScriptedCrash(f"fake compute: scripted crash in {method}")
        elif kind == "dropped":
            raise ComputeUnknownOutcome()
        with self._store.edit() as state:
            result = effect(state, argument if kind == "pending" else None)
        if kind == "lost":
            raise ComputeUnknownOutcome()
        return result

    @staticmethod
    def _next_step(state: State, method: str, target: str) -> str:
        for key in (f"{method}|{target}", f"{method}|{ANY}"):
            steps = state["scripts"].get(key)
            if steps:
                return steps.pop(0)
        return OK

    # --- Namespaces ---------------------------------------------------------------------------
    def ensure_namespace(self, namespace: NamespaceRef) -> NamespaceResult:
        def effect(state: State, pending_code: str | None) -> NamespaceResult:
            state["namespaces"][namespace.id] = "provisioning" if pending_code else "ready"
            return NamespaceResult(namespace.id, done=pending_code is None, pending_reason=pending_code)

        return self._call("ensure_namespace", namespace.id, effect)

    def delete_namespace(self, namespace: NamespaceRef) -> NamespaceResult:
        def effect(state: State, pending_code: str | None) -> NamespaceResult:
            if pending_code:
                state["namespaces"][namespace.id] = "deleting"
            else:
                state["namespaces"].pop(namespace.id, None)
            return NamespaceResult(namespace.id, done=pending_code is None, pending_reason=pending_code)

        return self._call("delete_namespace", namespace.id, effect)

    # --- revisions ------------------------------------------------------------------------------
    def prepare_revision(self, revision: RevisionRef, context: RevisionContext) -> Readiness:
        def effect(state: State, pending_code: str | None) -> Readiness:
            gateway = _gateway(state, revision.agent_id)
            if not gateway["running"] and gateway["serving"] is None:
                if not gateway["starts"]:
                    gateway["workspace_files"] = sorted(revision.initial_workspace_files)
                gateway["delivered"] = _delivered(context)
                _transition(gateway, running=True, ready=pending_code is None,
                            line=f"gateway starting for revision {revision.id}")
                gateway["starts"] += 1
                gateway["restarts"] = 0
            elif gateway["running"] and pending_code is None and not gateway["ready"]:
                gateway["ready"], gateway["since"] = True, now_text()
            if revision.id not in gateway["staged"]:
                gateway["staged"].append(revision.id)
            return self._readiness(revision, pending_code)

        return self._call("prepare_revision", revision.id, effect)

    def activate_revision(self, revision: RevisionRef, context: RevisionContext) -> Readiness:
        def effect(state: State, pending_code: str | None) -> Readiness:
            gateway = _gateway(state, revision.agent_id)
            if revision.id not in gateway["staged"]:
                raise ComputeError("REVISION_NOT_PREPARED", retryable=True)
            if gateway["serving"] != revision.id or not gateway["running"]:
                gateway["serving"] = revision.id
                if not gateway["running"]:
                    gateway["starts"] += 1
                gateway["delivered"] = _delivered(context)
                _transition(gateway, running=True, ready=pending_code is None,
                            line=f"gateway serving revision {revision.id}")
                gateway["restarts"] = 0
            elif pending_code is None and not gateway["ready"]:
                gateway["ready"], gateway["since"] = True, now_text()
            return self._readiness(revision, pending_code)

        return self._call("activate_revision", revision.id, effect)

    def verify_candidate(self, revision: RevisionRef, context: RevisionContext, *,
                         smoke: Sequence[SmokeConversation] = ()) -> CandidateVerdict:
        """A scripted refusal (``refuse_candidate``) or a pass; the serving gateway is never
        touched. Evidence is redacted of the Secrets the candidate would have been given."""

        def effect(state: State, _pending: str | None) -> dict[str, Any] | None:
            gateway = _gateway(state, revision.agent_id)
            gateway["verified"] = [*gateway.get("verified", []), revision.id]
            gateway["smoke_prompts"] = [conversation.prompt for conversation in smoke]
            refusals = state.setdefault("refusals", {})
            return refusals.pop(revision.id, None) or refusals.pop(ANY, None)

        refusal = self._call("verify_candidate", revision.id, effect)
        ran = ("config", "start", "model", *(("smoke",) if smoke else ()))
        if refusal is None:
            return CandidateVerdict(passed=True, checks=ran)
        secrets = [ref for _, ref in sorted(context.secret_environment.items())]
        secrets += [ref for ref in (context.harness_secret, context.gateway_password) if ref is not None]
        evidence = with_redactor(secrets, lambda redactor, _missing: tuple(
            redactor.redact_text(line) for line in refusal["evidence"]))
        return CandidateVerdict(passed=False, code=refusal["code"], check=refusal["check"], evidence=evidence,
                                checks=ran[:ran.index(refusal["check"]) + 1] if refusal["check"] in ran else ran)

    def deactivate_revision(self, revision: RevisionRef) -> None:
        def effect(state: State, _pending: str | None) -> None:
            gateway = _gateway(state, revision.agent_id)
            if gateway["serving"] != revision.id and revision.id in gateway["staged"]:
                gateway["staged"].remove(revision.id)
            if gateway["serving"] is None and gateway["running"]:
                _transition(gateway, running=False, line="gateway stopped")

        self._call("deactivate_revision", revision.id, effect)

    def stop_revision(self, revision: RevisionRef) -> None:
        def effect(state: State, _pending: str | None) -> None:
            gateway = _gateway(state, revision.agent_id)
            if gateway["serving"] == revision.id:
                gateway["serving"] = None
                gateway["last_served"] = revision.id
                _transition(gateway, running=False, line="gateway stopped")

        self._call("stop_revision", revision.id, effect)

    def retire_revision(self, revision: RevisionRef) -> None:
        def effect(state: State, _pending: str | None) -> None:
            gateway = _gateway(state, revision.agent_id)
            if revision.id in gateway["staged"]:
                gateway["staged"].remove(revision.id)
            if gateway["serving"] == revision.id:
                gateway["serving"] = None
                gateway["last_served"] = revision.id
                _transition(gateway, running=False, line="gateway stopped")

        self._call("retire_revision", revision.id, effect)

    @staticmethod
    def _readiness(revision: RevisionRef, pending_code: str | None) -> Readiness:
        return Readiness(namespace_id=revision.namespace_id, agent_id=revision.agent_id, revision_id=revision.id,
                         ready=pending_code is None, pending_reason=pending_code)

    def validate_harness_auth(self, *, method: str | None, spec: RevisionSpec) -> None:
        def effect(_state: State, _pending: str | None) -> None:
            if method not in SUPPORTED_HARNESS_METHODS:
                raise ComputeError("HARNESS_AUTH_UNSUPPORTED", retryable=False)

        self._call("validate_harness_auth", ANY, effect)

    # --- runtime credentials ----------------------------------------------------------------
    def runtime_credentials_status(self, agent: AgentRef) -> bool:
        return self._call("runtime_credentials_status", agent.id,
                          lambda state, _pending: agent.id in state["credentials"])

    def provision_runtime_credentials(self, agent: AgentRef) -> None:
        def effect(state: State, _pending: str | None) -> None:
            if agent.id not in state["credentials"]:
                state["credentials"].append(agent.id)

        self._call("provision_runtime_credentials", agent.id, effect)

    def delete_runtime_credentials(self, agent: AgentRef) -> None:
        def effect(state: State, _pending: str | None) -> None:
            if agent.id in state["credentials"]:
                state["credentials"].remove(agent.id)
            state.setdefault("credential_owners", {}).pop(agent.id, None)

        self._call("delete_runtime_credentials", agent.id, effect)

    def observe_runtime_credentials(self, agent: AgentRef) -> CredentialObservation:
        def effect(state: State, _pending: str | None) -> CredentialObservation:
            if agent.id not in state["credentials"]:
                return CredentialObservation(found=False)
            return CredentialObservation(found=True,
                                         owner=state.get("credential_owners", {}).get(agent.id, agent.id))

        return self._call("observe_runtime_credentials", agent.id, effect)

    # --- observation --------------------------------------------------------------------------
    def chat(self, *, namespace_id: str, agent_id: str, revision_id: str, gateway_password: SecretReference | None,
             messages: Sequence[ChatMessage], timeout: float, client_address: str | None = None) -> Iterator[str]:
        """A reply word by word when the fake gateway serves ``revision_id`` (scriptable as
        ``chat`` on the revision id, e.g. ``error("GATEWAY_TIMEOUT", retryable=False)``)."""
        def effect(state: State, _pending: str | None) -> str:
            gateway = state["gateways"].get(agent_id)
            if gateway is None or not gateway["running"] or gateway["serving"] != revision_id:
                raise ComputeError(CHAT_GATEWAY_NOT_RUNNING, retryable=False)
            return f"{FAKE_CHAT_REPLY} {messages[-1].content}"

        yield from re.findall(r"\S+\s*", self._call("chat", revision_id, effect))

    def operator_call(self, revision: RevisionRef, *, gateway_password: SecretReference | None, method: str,
                      params: Mapping[str, object], scopes: Sequence[str], timeout: float) -> object:
        """The operator RPC at the endpoint a test set with ``serve_gateway_at`` (a loopback
        stand-in speaking real WebSockets), with the password the SecretDriver holds; without
        one, the fake gateway has no RPC: ``GATEWAY_NOT_RUNNING``."""
        with self._store.edit() as state:
            state["calls"].append(["operator_call", revision.id])
            url = state.get("endpoints", {}).get(revision.agent_id)
        if url is None or gateway_password is None:
            raise ComputeError(CHAT_GATEWAY_NOT_RUNNING, retryable=False)
        password = get_secret_driver(gateway_password.driver_id).with_value(gateway_password.backend_name, str)
        try:
            with GatewayOperator(str(url), password=password, scopes=scopes, timeout=timeout) as gateway:
                return gateway.call(method, params)
        except GatewayRpcError as exc:
            raise ComputeError(exc.code, retryable=False, message=str(exc), gateway_code=exc.gateway_code) from None

    def observe_runtime(self, agent: AgentRef) -> RuntimeObservation:
        """The fake gateway's state (scriptable as ``observe_runtime`` on the Agent id)."""
        def effect(state: State, _pending: str | None) -> RuntimeObservation:
            now = datetime.now(UTC)
            gateway = state["gateways"].get(agent.id)
            if gateway is None:
                return RuntimeObservation(state="stopped", observed_at=now)
            gateway = _gateway(state, agent.id)
            since = datetime.fromisoformat(gateway["since"]) if gateway["since"] else None
            facts: dict[str, Any] = {"observed_at": now, "since": since, "restarts": gateway["restarts"],
                                     "revision_id": gateway["serving"] or gateway.get("last_served")}
            if gateway["crashed"]:
                return RuntimeObservation(state="crashed", **facts)
            if not gateway["running"]:
                return RuntimeObservation(state="stopped", **facts)
            memory, cpu = gateway["usage"]
            return RuntimeObservation(state="running" if gateway["ready"] else "starting",
                                      memory_bytes=None if memory is None else int(memory),
                                      cpu_percent=None if cpu is None else float(cpu), **facts)

        return self._call("observe_runtime", agent.id, effect)

    def read_logs(self, agent: AgentRef, *, secrets: Sequence[SecretReference], cursor: str | None = None,
                  max_lines: int = LOG_MAX_LINES, max_bytes: int = LOG_MAX_BYTES) -> LogPage:
        """The fake gateway's log lines, redacted like the local driver's (``logs.Redactor``); a
        line printed while the gateway held a Secret whose value is now gone is withheld."""
        def effect(state: State, _pending: str | None) -> tuple[int, list[list[Any]]]:
            gateway = state["gateways"].get(agent.id)
            if gateway is None:
                return 0, []
            return gateway.get("log_base", 0), [list(entry) for entry in gateway.get("log", [])]

        base, entries = self._call("read_logs", agent.id, effect)
        end = base + len(entries)
        start, reset = end, False
        if cursor is not None:
            kind, _, number = cursor.partition(":")
            if kind == FAKE_CURSOR and number.isdigit() and int(number) <= end:
                start = int(number)
            else:
                reset = True
        tail = cursor is None or reset
        first = max(start if not tail else 0, base)
        window = entries[first - base:]
        skipped = not tail and first > start
        if len(window) > max_lines:
            window, skipped = window[-max_lines:], not tail or skipped
        while window and sum(len(text) + 1 for text, _ids in window) > max_bytes:
            window, skipped = window[1:], not tail or skipped

        def page(redactor: Redactor, missing: frozenset[str]) -> LogPage:
            lines = [redactor.line(text.encode()) for text, held in window if not missing & set(held)]
            return LogPage(lines=tuple(lines), cursor=f"{FAKE_CURSOR}:{end}", skipped=skipped, reset=reset,
                           withheld=len(window) - len(lines))

        return with_redactor(secrets, page)

    def get_gateway_endpoint(self, revision: RevisionRef) -> str | None:
        def effect(state: State, _pending: str | None) -> str | None:
            gateway = state["gateways"].get(revision.agent_id)
            if gateway is None or gateway["serving"] != revision.id:
                return None
            port = 20000 + int(hashlib.sha256(revision.agent_id.encode()).hexdigest()[:4], 16) % 10000
            return f"ws://127.0.0.1:{port}"

        return self._call("get_gateway_endpoint", revision.id, effect)

    def diagnose(self, revision: RevisionRef) -> list[DiagnosticCheck]:
        def effect(state: State, _pending: str | None) -> list[DiagnosticCheck]:
            gateway = state["gateways"].get(revision.agent_id) or {}
            running, serving = bool(gateway.get("running")), gateway.get("serving") == revision.id
            now = now_text()
            return [
                DiagnosticCheck("gateway", "process", "succeeded" if running else "failed", now,
                                None if running else "GATEWAY_NOT_RUNNING"),
                DiagnosticCheck("gateway", "revision", "succeeded" if serving else "failed", now,
                                None if serving else "REVISION_NOT_SERVING"),
            ]

        return self._call("diagnose", revision.id, effect)


_STEP_KINDS = frozenset({"ok", "pending", "error", "fatal", "raise", "lost", "dropped", "sleep"})


def _parse(step: str) -> tuple[str, str]:
    kind, _, argument = step.partition(":")
    if kind not in _STEP_KINDS:
        raise ValueError(f"unknown fake compute step {step!r}")
    if kind == "sleep":
        float(argument)
    if kind in ("error", "fatal") and not argument:
        raise ValueError("error steps need a code")
    if kind == "pending" and not argument:
        argument = "REVISION_INCOMPLETE"
    return kind, argument
