"""Verifying a candidate revision on ``local`` before cutover (``ComputeDriver.verify_candidate``).

A candidate is a short-lived gateway of its own: folder ``agents/<agent_id>/candidate/`` (its
own state, home, workspace and logs: no claim on the Agent's state), its own port, the
revision's config rendered for that folder (without ``channels``: a candidate must never answer
a channel's messages, and without plugin selections, which are installed and verified into the
Agent's own state by ``prepare_revision``), and the revision's Secrets in its environment.

The checks, in order, each ending the verification with its code on failure:

1. ``config``: ``openclaw config validate --json`` on the candidate config with the candidate
   environment (the pinned runtime's own verdict, ~1-3 s): ``RUNTIME_CONFIG_REFUSED`` with its
   issues;
2. ``start``: the candidate gateway reaches ``/readyz`` within the driver's ready timeout:
   ``RUNTIME_START_FAILED`` with the last lines of its output;
3. ``model``: one chat turn capped at one token through the candidate gateway (the gateway
   exposes no provider model list): the gateway's ``authentication_error`` (the provider
   refused the key) is ``MODEL_CREDENTIAL_REFUSED``, any other failure ``MODEL_UNREACHABLE``;
4. ``smoke``: each smoke conversation's reply must match its pattern: ``SMOKE_TEST_FAILED``.

Every evidence line is redacted of every value the candidate was given before it leaves here.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx

from occ.drivers.compute import local_chat
from occ.drivers.compute import local_supervisor as supervisor
from occ.drivers.compute.base import (
    VERIFY_CONFIG_REFUSED,
    VERIFY_CREDENTIAL_REFUSED,
    VERIFY_EVIDENCE_CHARS,
    VERIFY_EVIDENCE_LINES,
    VERIFY_MODEL_UNREACHABLE,
    VERIFY_SMOKE_FAILED,
    VERIFY_START_FAILED,
    CandidateVerdict,
    ChatMessage,
    ComputeError,
    SmokeConversation,
)
from occ.drivers.compute.files import GATEWAY_TITLES
from occ.drivers.compute.logs import Redactor

VALIDATE_TIMEOUT_SECONDS = 120.0
MODEL_TIMEOUT_SECONDS = 120.0
SMOKE_TIMEOUT_SECONDS = 120.0
PROBE_PROMPT = "Reply with the single word OK."
LOG_TAIL_BYTES = 64 * 1024


def candidate_document(document: Mapping[str, Any]) -> dict[str, Any]:
    """The revision's document for a candidate: no channels (it must not answer anyone)."""
    return {key: value for key, value in document.items() if key != "channels"}


class Verification:
    """One candidate's checks; ``redactor`` knows every value its environment holds."""

    def __init__(self, *, argv_prefix: Sequence[str], env: Mapping[str, str], cwd: Path, log_path: Path,
                 port: int, password: str, redactor: Redactor, ready_timeout: float, stop_grace: float) -> None:
        self.argv_prefix, self.env, self.cwd, self.log_path = list(argv_prefix), dict(env), cwd, log_path
        self.port, self.password, self.redactor = port, password, redactor
        self.ready_timeout, self.stop_grace = ready_timeout, stop_grace
        self.ran: list[str] = []

    def _lines(self, lines: Sequence[str]) -> tuple[str, ...]:
        kept = [self.redactor.line(line.encode()) for line in lines if line.strip()]
        return tuple(line[:VERIFY_EVIDENCE_CHARS] for line in kept[-VERIFY_EVIDENCE_LINES:])

    def _refused(self, code: str, check: str, lines: Sequence[str]) -> CandidateVerdict:
        return CandidateVerdict(passed=False, code=code, check=check, evidence=self._lines(lines),
                                checks=tuple(self.ran))

    def _log_tail(self) -> list[str]:
        try:
            with self.log_path.open("rb") as handle:
                handle.seek(0, 2)
                handle.seek(max(0, handle.tell() - LOG_TAIL_BYTES))
                return handle.read().decode("utf-8", errors="replace").splitlines()[1:]
        except OSError:
            return []

    def run(self, smoke: Sequence[SmokeConversation],
            started: Callable[[supervisor.ProcessIdentity], None]) -> CandidateVerdict:
        self.ran.append("config")
        refused = self._validate()
        if refused is not None:
            return refused
        self.ran.append("start")
        try:
            process = supervisor.spawn([*self.argv_prefix, "gateway", "--port", str(self.port)], env=self.env,
                                       cwd=self.cwd, log_path=self.log_path)
        except OSError:
            raise ComputeError("GATEWAY_SPAWN_FAILED", retryable=True) from None
        started(process)
        try:
            if not self._await_ready(process):
                return self._refused(VERIFY_START_FAILED, "start", self._log_tail())
            self.ran.append("model")
            refused = self._probe_model()
            if refused is not None:
                return refused
            if smoke:
                self.ran.append("smoke")
                refused = self._smoke(smoke)
                if refused is not None:
                    return refused
            return CandidateVerdict(passed=True, checks=tuple(self.ran))
        finally:
            supervisor.stop(process, grace=self.stop_grace, titles=GATEWAY_TITLES)

    def _validate(self) -> CandidateVerdict | None:
        try:
            result = subprocess.run([*self.argv_prefix, "config", "validate", "--json"],  # noqa: S603 - our runtime
                                    cwd=self.cwd, env=self.env, capture_output=True, text=True,
                                    timeout=VALIDATE_TIMEOUT_SECONDS, check=False)
        except subprocess.TimeoutExpired:
            return self._refused(VERIFY_CONFIG_REFUSED, "config", ["openclaw config validate did not finish in time"])
        except OSError:
            raise ComputeError("RUNTIME_NOT_INSTALLED", retryable=True) from None
        verdict: dict[str, Any] = {}
        start = result.stdout.find("{")
        if start >= 0:
            try:
                verdict = json.loads(result.stdout[start:])
            except ValueError:
                verdict = {}
        if result.returncode == 0 and verdict.get("valid") is True:
            return None
        issues = [f"{issue.get('path', '')}: {issue.get('message', '')}" for issue in verdict.get("issues") or []
                  if isinstance(issue, dict)]
        return self._refused(VERIFY_CONFIG_REFUSED, "config",
                             issues or (result.stderr or result.stdout).splitlines()[-VERIFY_EVIDENCE_LINES:])

    def _await_ready(self, process: supervisor.ProcessIdentity) -> bool:
        deadline = time.monotonic() + self.ready_timeout
        while time.monotonic() < deadline:
            if supervisor.readyz(self.port):
                return True
            if not supervisor.is_same_process(process, titles=GATEWAY_TITLES):
                return False
            time.sleep(0.5)
        return False

    def _probe_model(self) -> CandidateVerdict | None:
        """One turn capped at one token through the candidate gateway."""
        try:
            response = httpx.post(f"http://127.0.0.1:{self.port}{local_chat.CHAT_PATH}",
                                  headers={"Authorization": f"Bearer {self.password}"}, timeout=MODEL_TIMEOUT_SECONDS,
                                  json={"model": local_chat.GATEWAY_MODEL, "max_tokens": 1,
                                        "messages": [{"role": "user", "content": PROBE_PROMPT}]})
        except httpx.HTTPError as exc:
            return self._refused(VERIFY_MODEL_UNREACHABLE, "model",
                                 [f"the candidate gateway did not answer: {type(exc).__name__}", *self._log_tail()])
        if response.status_code == 200:
            return None
        try:
            error = response.json().get("error") or {}
        except ValueError:
            error = {}
        said = f"the gateway answered {response.status_code}: {error.get('message') or response.text[:200]}"
        if error.get("type") == "authentication_error":
            return self._refused(VERIFY_CREDENTIAL_REFUSED, "model", [said, *self._model_lines()])
        return self._refused(VERIFY_MODEL_UNREACHABLE, "model", [said, *self._model_lines()])

    def _model_lines(self) -> list[str]:
        """The runtime's own words about the model call, from the candidate's output."""
        words = ("model", "provider", "error", "failover")
        return [line for line in self._log_tail() if any(word in line.lower() for word in words)][-8:]

    def _smoke(self, smoke: Sequence[SmokeConversation]) -> CandidateVerdict | None:
        for number, conversation in enumerate(smoke, start=1):
            try:
                reply = "".join(local_chat.stream_chat(
                    port=self.port, password=self.password, timeout=SMOKE_TIMEOUT_SECONDS,
                    messages=[ChatMessage(role="user", content=conversation.prompt)]))
            except ComputeError as exc:
                return self._refused(VERIFY_SMOKE_FAILED, "smoke",
                                     [f"conversation {number}: no reply ({exc.code})"])
            if not conversation.matches(reply):
                return self._refused(VERIFY_SMOKE_FAILED, "smoke", [
                    f"conversation {number}: the reply did not match {conversation.expect!r}",
                    f"reply: {reply[:300]}"])
        return None
