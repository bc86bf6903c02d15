"""The ``local`` ComputeDriver: one real OpenClaw gateway per Agent, as a supervised local process.

Files, all under ``OCC_DATA_DIR`` (the driver reads and keeps no state in OCC's tables):

    namespaces/<namespace_id>/                 created by ensure_namespace (nothing else lives there)
    agents/<agent_id>/                         0700
        state/                                 OPENCLAW_STATE_DIR (sessions, caches, the runtime's SQLite)
        workspace/                             agents.defaults.workspace; initial files written before the first start
        home/                                  HOME of the gateway
        revisions/<revision_id>/openclaw.json  the rendered config, 0600, never edited by the gateway
        gateway.json                           the supervisor's record: pid, start time, argv, port, revision, state
        logs/gateway.log                       the gateway's stdout and stderr
        logs/openclaw.log                      the runtime's own log (``logging.file``; else /tmp/openclaw/...)

Rendering starts from the revision snapshot's configuration document; the driver owns
``gateway.mode`` (local), ``gateway.bind`` (loopback), ``gateway.port``, ``gateway.auth``
(password from the environment), the OpenAI-compatible HTTP endpoint, ``logging.file``, the
workspace folder and ``env.shellEnv`` (off: the gateway never imports a login shell's
environment). Secret values (the gateway password, the model key, bound Secrets) are read
through the SecretDriver only while the process is spawned and reach the gateway only
through its environment: never a file, a log line or a work row. The gateway password is a
runtime credential the worker creates and hands over by reference
(``runtime_credential_purposes``).

Semantics: the first prepare starts the gateway and reports pending until ``/readyz``
answers 200; a prepare while a gateway serves another revision only stages the new config;
activation restarts the gateway on the revision's config and waits (bounded) for readiness;
retire removes a revision's staged files and stops the gateway only when it still serves
that very revision (Agent deletion retires every revision); stop signals only the verified
process serving the Agent; ``maintain`` reports a dead gateway due for a restart and
``restart_revision`` restarts it (the worker's maintenance job decides it should still run).

Each gateway takes about 1.2 GB of memory and ~20 s (two cores) to become ready.

One module of ~740 lines: the ComputeDriver contract for local processes, one method per
operation, all over the same Agent folder, lock and gateway record; what they build on has its
own module (``files``: the folder and ``gateway.json``; ``local_supervisor``, ``local_plugins``,
``local_chat``, ``logs``).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from secrets import token_hex
from typing import Any, NoReturn, TypeVar

from django.conf import settings

from occ.documents import RevisionSpec
from occ.drivers.compute import local_chat
from occ.drivers.compute import local_supervisor as supervisor
from occ.drivers.compute.base import (
    CHAT_GATEWAY_NOT_RUNNING,
    GATEWAY_PASSWORD_PURPOSE,
    LOG_MAX_BYTES,
    LOG_MAX_LINES,
    RUNTIME_CRASH_LOOP,
    AgentRef,
    CandidateVerdict,
    ChatMessage,
    ComputeDriver,
    ComputeError,
    CredentialObservation,
    DiagnosticCheck,
    LogPage,
    NamespaceRef,
    NamespaceResult,
    Readiness,
    RestartDue,
    RevisionContext,
    RevisionRef,
    RuntimeObservation,
    SecretReference,
    SmokeConversation,
    now_text,
)
from occ.drivers.compute.files import (
    CRASH_LOOP_EXITS,
    FAILED,
    GATEWAY_TITLES,
    RUNNING,
    STOPPED,
    AgentPaths,
    GatewayRecord,
    LogEpoch,
    remove_folder,
    write_private,
)
from occ.drivers.compute.gateway_rpc import GatewayOperator, GatewayRpcError
from occ.drivers.compute.local_candidate import Verification, candidate_document
from occ.drivers.compute.local_plugins import PluginDelivery, PreparedPlugins
from occ.drivers.compute.logs import Redactor, fingerprint, read_log_file, with_redactor
from occ.drivers.secrets import SecretDriverError, SecretValueMissing, get_secret_driver
from occ.ids import IdPrefix, is_valid_id
from occ.openclaw.document import model_key_env
from occ.openclaw.render import render_runtime_config
from occ.runtime import Runtime, RuntimeMissing

logger = logging.getLogger(__name__)
T = TypeVar("T")

PENDING_CODE = "REVISION_INCOMPLETE"
PASSWORD_ENV = "OPENCLAW_GATEWAY_PASSWORD"
SUPPORTED_HARNESS_METHODS = frozenset({"api_key"})
# Each gateway reaches base + 110 with its derived ports (browser control, CDP range).
PORT_STRIDE = 120
# Host settings a gateway may need to reach a model provider; nothing else of ours is inherited.
PASSED_THROUGH_ENV = ("LANG", "LC_ALL", "TZ", "NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "SSL_CERT_DIR",
                      "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy")
MAX_RESTART_BACKOFF_SECONDS = 300.0
# Spawns whose log stretch read_logs can still vouch for; older output is withheld.
MAX_LOG_EPOCHS = 50
# How long observe_runtime samples the gateway's CPU use.
CPU_SAMPLE_SECONDS = 0.25
LOCK_WAIT_SLACK_SECONDS = 30.0


def _file_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def _from_epoch(seconds: float) -> datetime | None:
    return datetime.fromtimestamp(seconds, UTC) if seconds > 0 else None


# --- rendering --------------------------------------------------------------------------------------


def render_config(document: Mapping[str, Any], *, port: int, paths: AgentPaths, deliver_model_key: bool
                  ) -> dict[str, Any]:
    """The gateway's ``openclaw.json`` for this Agent's folder (see ``occ.openclaw.render``)."""
    return render_runtime_config(document, port=port, password_env=PASSWORD_ENV, workspace=str(paths.workspace),
                                 log_file=str(paths.runtime_log), deliver_model_key=deliver_model_key)


def child_environment(*, runtime: Runtime, paths: AgentPaths, config_path: Path, port: int,
                      secret_values: Mapping[str, str], host_env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The gateway's whole environment: a few host settings, the driver's variables, and the
    secret values (bound Secrets first, so they can never replace a driver-owned variable)."""
    host = os.environ if host_env is None else host_env
    env = {name: host[name] for name in PASSED_THROUGH_ENV if host.get(name)}
    env.setdefault("LANG", "C.UTF-8")
    env.update(secret_values)
    env.update({
        "PATH": runtime.bin_path(), "HOME": str(paths.home), "OPENCLAW_STATE_DIR": str(paths.state),
        "OPENCLAW_CONFIG_PATH": str(config_path), "OPENCLAW_GATEWAY_PORT": str(port),
        # The gateway never rewrites the rendered config (migrations, doctor, plugin installs).
        "OPENCLAW_CONFIG_READONLY": "1",
    })
    return env


# --- the driver -------------------------------------------------------------------------------------


class LocalComputeDriver(ComputeDriver):
    driver_id = "local"
    implementation = "local"
    runtime_credential_purposes = (GATEWAY_PASSWORD_PURPOSE,)

    def __init__(self, *, data_dir: Path | None = None, runtime: Runtime | None = None,
                 port_range: str | None = None, ready_timeout: float | None = None,
                 stop_grace: float | None = None) -> None:
        self.data_dir = Path(data_dir or settings.OCC_DATA_DIR)
        self.runtime = runtime or Runtime(Path(settings.OCC_RUNTIME_DIR))
        first, last = (int(p) for p in (port_range or settings.OCC_LOCAL_GATEWAY_PORT_RANGE).split("-"))
        self.ports = range(first, last + 1, PORT_STRIDE)
        self.ready_timeout = float(ready_timeout or settings.OCC_LOCAL_GATEWAY_READY_TIMEOUT_SECONDS)
        self.stop_grace = float(stop_grace or settings.OCC_LOCAL_STOP_GRACE_SECONDS)

    # --- layout and locks ---------------------------------------------------------------------
    def agent_paths(self, agent_id: str) -> AgentPaths:
        if not is_valid_id(agent_id, IdPrefix.AGENT):
            raise ComputeError("INVALID_AGENT_ID", retryable=False)
        return AgentPaths(self.data_dir / "agents" / agent_id)

    def namespace_dir(self, namespace_id: str) -> Path:
        if not is_valid_id(namespace_id, IdPrefix.NAMESPACE):
            raise ComputeError("INVALID_NAMESPACE_ID", retryable=False)
        return self.data_dir / "namespaces" / namespace_id

    @contextlib.contextmanager
    def _agent_lock(self, paths: AgentPaths, *, wait: bool = True) -> Iterator[bool]:
        """One driver call at a time per Agent, across processes (worker, beat, a second worker).
        A waiting call (a job's) creates the Agent's folder; a non-waiting one (the sweep's)
        never does: the sweep must not bring back the folder of an Agent deleted under it."""
        if wait:
            paths.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        timeout = self.ready_timeout + self.stop_grace + LOCK_WAIT_SLACK_SECONDS if wait else 0.0
        with supervisor.file_lock(paths.lock, timeout=timeout, create=wait) as taken:
            if wait and not taken:
                raise ComputeError("AGENT_RUNTIME_BUSY", retryable=True)
            yield taken

    # --- namespaces -----------------------------------------------------------------------------
    def ensure_namespace(self, namespace: NamespaceRef) -> NamespaceResult:
        folder = self.namespace_dir(namespace.id)
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        return NamespaceResult(namespace_id=namespace.id, done=True)

    def delete_namespace(self, namespace: NamespaceRef) -> NamespaceResult:
        shutil.rmtree(self.namespace_dir(namespace.id), ignore_errors=True)
        return NamespaceResult(namespace_id=namespace.id, done=True)

    # --- admission --------------------------------------------------------------------------------
    def validate_harness_auth(self, *, method: str | None, spec: RevisionSpec) -> None:
        if method not in SUPPORTED_HARNESS_METHODS:
            raise ComputeError("HARNESS_AUTH_UNSUPPORTED", retryable=False)
        if model_key_env(spec.configuration) is None:
            # A built-in provider other than OpenAI or Anthropic: we would not know its variable.
            raise ComputeError("HARNESS_AUTH_PROVIDER_UNSUPPORTED", retryable=False)

    # --- runtime credentials ---------------------------------------------------------------------
    def runtime_credentials_status(self, agent: AgentRef) -> bool:
        """Whether the gateway password the worker keeps for the Agent exists, with its value."""
        password = agent.runtime_credentials.get(GATEWAY_PASSWORD_PURPOSE)
        if password is None:
            return False
        try:
            return bool(get_secret_driver(password.driver_id).with_value(password.backend_name, lambda _value: True))
        except SecretValueMissing:
            return False
        except SecretDriverError:
            raise ComputeError("SECRET_STORE_UNAVAILABLE", retryable=True) from None

    def provision_runtime_credentials(self, agent: AgentRef) -> None:
        """Nothing of its own to create: the worker created the gateway password; a reference
        missing or without its value is a retryable failure (the next attempt creates it)."""
        if not self.runtime_credentials_status(agent):
            raise ComputeError("RUNTIME_CREDENTIALS_MISSING", retryable=True)

    def observe_runtime_credentials(self, agent: AgentRef) -> CredentialObservation:
        """Found when the password the worker handed over exists with its value; the worker
        hands over only the Agent's own runtime credentials, so the owner is that Agent."""
        if not self.runtime_credentials_status(agent):
            return CredentialObservation(found=False)
        return CredentialObservation(found=True, owner=agent.id)

    def delete_runtime_credentials(self, agent: AgentRef) -> None:
        """The Agent's teardown (after every revision was retired): stop whatever gateway is
        left and remove the Agent's folder (state, workspace, logs): nothing of the Agent
        outlives it. The worker removes the gateway password with the Agent."""
        paths = self.agent_paths(agent.id)
        with self._agent_lock(paths):
            record = GatewayRecord.read(paths.record)
            if record is not None and record.process is not None:
                supervisor.stop(record.process, grace=self.stop_grace, titles=GATEWAY_TITLES)
            self._remove_candidate(AgentPaths(paths.root / "candidate"))
            remove_folder(paths.root)

    # --- revisions --------------------------------------------------------------------------------
    def prepare_revision(self, revision: RevisionRef, context: RevisionContext) -> Readiness:
        paths = self.agent_paths(revision.agent_id)
        with self._agent_lock(paths):
            paths.ensure()
            record = GatewayRecord.read(paths.record)
            if record is not None and record.state == RUNNING and record.alive():
                if record.revision_id != revision.id:
                    # A replacement: the serving gateway stays; activation restarts it on this config
                    # (its plugins installed and verified now, before anything stops).
                    self._stage_verified(paths, revision, context, port=record.port)
                    return self._readiness(revision, ready=True)
                return self._check_starting(paths, record, revision)
            if (record is not None and record.revision_id == revision.id and record.state == RUNNING
                    and not record.ready_seen):
                # Our start of this revision died before it was ready: spend an attempt.
                self._exited(paths, record)
            self._start(paths, revision, context, previous=record)
            return self._readiness(revision, ready=False)

    def activate_revision(self, revision: RevisionRef, context: RevisionContext) -> Readiness:
        paths = self.agent_paths(revision.agent_id)
        with self._agent_lock(paths):
            paths.ensure()
            record = GatewayRecord.read(paths.record)
            live = record is not None and record.state == RUNNING and record.alive()
            if record is not None and live and record.revision_id == revision.id:
                return self._await_ready(paths, record, revision)
            if record is not None and not live and record.process is not None:
                record = self._noted_exit(paths, record)  # counted before the next start carries it
            if record is not None and record.process is not None:
                supervisor.stop(record.process, grace=self.stop_grace, titles=GATEWAY_TITLES)
                record = replace(record, state=STOPPED, stopped_at=time.time())
                record.write(paths.record)
            started = self._start(paths, revision, context, previous=record)
            return self._await_ready(paths, started, revision)

    def deactivate_revision(self, revision: RevisionRef) -> None:
        self.stop_revision(revision)

    # --- verifying a candidate before cutover (local_candidate) -----------------------------------
    def verify_candidate(self, revision: RevisionRef, context: RevisionContext, *,
                         smoke: Sequence[SmokeConversation] = ()) -> CandidateVerdict:
        """A short-lived candidate gateway in ``candidate/`` on its own port: config validated by
        the runtime, ready, model answers, smoke conversations match (``local_candidate``).
        The serving gateway is never touched; the candidate is stopped and removed on return."""
        began = time.monotonic()
        paths = self.agent_paths(revision.agent_id)
        candidate = AgentPaths(paths.root / "candidate")
        try:
            node, entry = self.runtime.require()
        except RuntimeMissing:
            raise ComputeError("RUNTIME_NOT_INSTALLED", retryable=True) from None
        with self._agent_lock(paths):
            self._remove_candidate(candidate)
            candidate.ensure()
            try:
                with supervisor.file_lock(self.data_dir / "agents" / ".ports.lock", timeout=30.0) as taken:
                    if not taken:
                        raise ComputeError("AGENT_RUNTIME_BUSY", retryable=True)
                    port = self._choose_port(revision.agent_id, None, reserve_own_candidate=True)
                    record = GatewayRecord(agent_id=revision.agent_id, revision_id=revision.id, port=port,
                                           state=RUNNING, process=None, started_at=time.time())
                    record.write(candidate.record)
                document = candidate_document(revision.spec.configuration_document())
                config = render_config(document, port=port, paths=candidate,
                                       deliver_model_key=context.harness_secret is not None)
                config_path = candidate.root / "openclaw.json"
                write_private(config_path, json.dumps(config, indent=2, sort_keys=True) + "\n")

                def check(values: dict[str, str]) -> CandidateVerdict:
                    env = child_environment(runtime=self.runtime, paths=candidate, config_path=config_path,
                                            port=port, secret_values=values)
                    verification = Verification(
                        argv_prefix=[str(node), str(entry)], env=env, cwd=candidate.root,
                        log_path=candidate.gateway_log, port=port, password=values[PASSWORD_ENV],
                        redactor=Redactor(values.values()), ready_timeout=self.ready_timeout,
                        stop_grace=self.stop_grace)
                    return verification.run(smoke, started=lambda process: replace(
                        record, process=process).write(candidate.record))

                verdict = self._with_secret_values(self._secret_items(revision, context), check)
            finally:
                self._remove_candidate(candidate)
        logger.info("local compute: candidate %s of %s %s (%s) in %.1f s", revision.id, revision.agent_id,
                    "passed" if verdict.passed else "refused", verdict.code or ",".join(verdict.checks),
                    time.monotonic() - began)
        return verdict

    def _remove_candidate(self, candidate: AgentPaths) -> None:
        """Stop a candidate gateway left behind (a worker that died mid-check) and remove its folder."""
        record = GatewayRecord.read(candidate.record)
        if record is not None and record.process is not None:
            supervisor.stop(record.process, grace=self.stop_grace, titles=GATEWAY_TITLES)
        remove_folder(candidate.root)

    def stop_revision(self, revision: RevisionRef) -> None:
        """Stop the gateway if it serves this revision; a gateway serving another is left alone."""
        paths = self.agent_paths(revision.agent_id)
        if not paths.root.exists():
            return
        with self._agent_lock(paths):
            self._stop_if_serving(paths, revision.id)

    def retire_revision(self, revision: RevisionRef) -> None:
        """Remove the revision's staged files. A gateway serving a newer revision is never
        touched; one still serving this revision (no replacement took over, as in Agent
        deletion) is stopped first."""
        paths = self.agent_paths(revision.agent_id)
        if not paths.root.exists():
            return
        with self._agent_lock(paths):
            self._stop_if_serving(paths, revision.id)
            shutil.rmtree(paths.revision_dir(revision.id), ignore_errors=True)

    def _stop_if_serving(self, paths: AgentPaths, revision_id: str) -> None:
        record = GatewayRecord.read(paths.record)
        if record is None or record.revision_id != revision_id or record.state == STOPPED:
            return
        if record.process is not None:
            supervisor.stop(record.process, grace=self.stop_grace, titles=GATEWAY_TITLES)
        replace(record, state=STOPPED, stopped_at=time.time()).write(paths.record)

    # --- talking to the gateway ---------------------------------------------------------------------
    def _serving_gateway(self, agent_id: str, revision_id: str, gateway_password: SecretReference | None
                         ) -> tuple[int, str]:
        """The port and password of the live gateway process serving ``revision_id``; the
        password is read from the SecretDriver for the caller's one call."""
        record = GatewayRecord.read(self.agent_paths(agent_id).record)
        if (record is None or record.state != RUNNING or record.revision_id != revision_id
                or not record.alive()):
            raise ComputeError(CHAT_GATEWAY_NOT_RUNNING, retryable=False, message="no gateway serves this revision")
        if gateway_password is None:
            raise ComputeError(CHAT_GATEWAY_NOT_RUNNING, retryable=False, message="the gateway has no password yet")
        try:
            password = get_secret_driver(gateway_password.driver_id).with_value(gateway_password.backend_name, str)
        except (SecretDriverError, SecretValueMissing) as exc:
            raise ComputeError(CHAT_GATEWAY_NOT_RUNNING, retryable=False,
                               message="the gateway password is unavailable") from exc
        return record.port, password

    def chat(self, *, namespace_id: str, agent_id: str, revision_id: str, gateway_password: SecretReference | None,
             messages: Sequence[ChatMessage], timeout: float, client_address: str | None = None) -> Iterator[str]:
        """The loopback gateway's chat endpoint (``local_chat``), when its live process serves
        ``revision_id``."""
        port, password = self._serving_gateway(agent_id, revision_id, gateway_password)
        yield from local_chat.stream_chat(port=port, password=password, messages=messages, timeout=timeout)

    def operator_call(self, revision: RevisionRef, *, gateway_password: SecretReference | None, method: str,
                      params: Mapping[str, object], scopes: Sequence[str], timeout: float) -> object:
        """The loopback gateway's operator RPC, when its live process serves the revision."""
        port, password = self._serving_gateway(revision.agent_id, revision.id, gateway_password)
        try:
            with GatewayOperator(f"ws://127.0.0.1:{port}", password=password, scopes=scopes,
                                 timeout=timeout) as gateway:
                return gateway.call(method, params)
        except GatewayRpcError as exc:
            raise ComputeError(exc.code, retryable=False, message=str(exc), gateway_code=exc.gateway_code) from None

    # --- observation --------------------------------------------------------------------------------
    def observe_runtime(self, agent: AgentRef) -> RuntimeObservation:
        """The gateway's state from the supervisor's record and its process tree (psutil):
        read-only, it writes no record and signals nothing."""
        now = datetime.now(UTC)
        record = GatewayRecord.read(self.agent_paths(agent.id).record)
        if record is None:
            return RuntimeObservation(state="stopped", observed_at=now)
        seen = RuntimeObservation(state="stopped", observed_at=now, revision_id=record.revision_id,
                                  restarts=record.restart_count, exit_status=record.exit_status,
                                  crash_loop=record.state != STOPPED and record.exits >= CRASH_LOOP_EXITS)
        if record.state == STOPPED:
            return replace(seen, since=_from_epoch(record.stopped_at))
        if record.state != RUNNING or record.process is None or not record.alive():
            return replace(seen, state="crashed", since=_from_epoch(record.exited_at))
        memory, cpu = supervisor.usage(record.process, titles=GATEWAY_TITLES, sample=CPU_SAMPLE_SECONDS)
        seen = replace(seen, memory_bytes=memory, cpu_percent=cpu)
        # Once ready, the gateway counts as running until it exits (the supervisor's view too).
        if record.ready_seen or supervisor.readyz(record.port):
            return replace(seen, state="running", since=_from_epoch(record.ready_at or record.started_at))
        return replace(seen, state="starting", since=_from_epoch(record.started_at))

    def read_logs(self, agent: AgentRef, *, secrets: Sequence[SecretReference], cursor: str | None = None,
                  max_lines: int = LOG_MAX_LINES, max_bytes: int = LOG_MAX_BYTES) -> LogPage:
        """``logs/gateway.log`` (the gateway's stdout and stderr), redacted of every value in
        ``secrets``. Each spawn's stretch of the log is returned only if the values it was given
        are all among them (their fingerprints match): a value since replaced or deleted cannot be
        redacted, so that stretch is withheld."""
        paths = self.agent_paths(agent.id)
        record = GatewayRecord.read(paths.record)
        epochs = record.log_epochs if record is not None else ()
        try:
            key = paths.redaction_key.read_bytes()
        except FileNotFoundError:
            key = b""

        def page(redactor: Redactor, _missing: frozenset[str]) -> LogPage:
            held = redactor.fingerprints(key) if key else frozenset()
            covered = [e.offset for e in epochs if e.fingerprints <= held]
            starts = [e.offset for e in epochs]

            def vouch(offset: int) -> bool:
                # The spawn whose output holds ``offset`` is the last one that began at or before it.
                began = max((s for s in starts if s <= offset), default=None)
                return began is not None and began in covered

            return read_log_file(paths.gateway_log, redactor=redactor, cursor=cursor, max_lines=max_lines,
                                 max_bytes=max_bytes, vouch=vouch)

        return with_redactor(secrets, page)

    def get_gateway_endpoint(self, revision: RevisionRef) -> str | None:
        record = GatewayRecord.read(self.agent_paths(revision.agent_id).record)
        if record is None or record.state == STOPPED:
            return None
        return f"ws://127.0.0.1:{record.port}"

    def diagnose(self, revision: RevisionRef) -> list[DiagnosticCheck]:
        """Process alive, serving this revision, ``/readyz``, port: read-only."""
        now = now_text()
        checks = [DiagnosticCheck("runtime", "installed", "succeeded" if self.runtime.is_installed() else "failed",
                                  now, None if self.runtime.is_installed() else "RUNTIME_NOT_INSTALLED")]
        record = GatewayRecord.read(self.agent_paths(revision.agent_id).record)
        alive = record is not None and record.state == RUNNING and record.alive()
        checks.append(DiagnosticCheck("gateway", "process", "succeeded" if alive else "failed", now,
                                      None if alive else "GATEWAY_NOT_RUNNING"))
        if record is None or not alive:
            checks.append(DiagnosticCheck("gateway", "readyz", "unknown", now, "GATEWAY_NOT_RUNNING"))
            return checks
        serving = record.revision_id == revision.id
        checks.append(DiagnosticCheck("gateway", "revision", "succeeded" if serving else "failed", now,
                                      None if serving else "SERVING_ANOTHER_REVISION"))
        ready = supervisor.readyz(record.port)
        checks.append(DiagnosticCheck("gateway", "readyz", "succeeded" if ready else "failed", now,
                                      None if ready else "GATEWAY_NOT_READY"))
        port_open = supervisor.port_is_open(record.port)
        checks.append(DiagnosticCheck("gateway", f"port:{record.port}", "succeeded" if port_open else "failed", now,
                                      None if port_open else "PORT_CLOSED"))
        return checks

    # --- maintenance --------------------------------------------------------------------------------
    def maintain(self) -> list[RestartDue]:
        """Collect exited children, note gateways that recovered, and report each dead
        gateway whose restart backoff has elapsed (from beat, via the maintenance job)."""
        supervisor.reap_children()
        agents = self.data_dir / "agents"
        if not agents.is_dir():
            return []
        due = []
        for folder in sorted(agents.iterdir()):
            if not is_valid_id(folder.name, IdPrefix.AGENT):
                continue
            try:
                record = self._maintain_agent(AgentPaths(folder))
            except Exception:
                logger.exception("local compute: maintenance of %s failed", folder.name)
                continue
            if record is not None:
                due.append(RestartDue(agent_id=record.agent_id, revision_id=record.revision_id))
        return due

    def _maintain_agent(self, paths: AgentPaths) -> GatewayRecord | None:
        """The record of a dead gateway due for a restart, else None. A live gateway ready
        again after restarts has its backoff reset (skipped while the folder is busy)."""
        record = GatewayRecord.read(paths.record)
        if record is None or record.state != RUNNING:
            return None
        if not record.alive():
            if not record.exited_at:
                self._note_exit(paths, record)
            return record if self._restart_is_due(record) else None
        if record.restarts and supervisor.readyz(record.port):
            with self._agent_lock(paths, wait=False) as taken:
                current = GatewayRecord.read(paths.record) if taken else None
                if current is not None and current.process == record.process:
                    recovered = replace(current, restarts=0, exits=0, ready_seen=True,
                                        ready_at=current.ready_at or time.time())
                    recovered.write(paths.record)
        return None

    def _note_exit(self, paths: AgentPaths, record: GatewayRecord) -> None:
        """Remember when a dead gateway was first found dead (skipped while the folder is busy)."""
        with self._agent_lock(paths, wait=False) as taken:
            current = GatewayRecord.read(paths.record) if taken else None
            if current is not None and current.process == record.process and not current.exited_at:
                self._noted_exit(paths, current)

    @staticmethod
    def _noted_exit(paths: AgentPaths, record: GatewayRecord) -> GatewayRecord:
        """``record`` with its process's exit counted once (when, its status if known), written."""
        if record.exited_at or record.process is None:
            return record
        status = supervisor.await_exit(paths.exit_record, record.process.pid)
        noted = replace(record, exited_at=time.time(), exits=record.exits + 1, exit_status=status)
        noted.write(paths.record)
        return noted

    def _exited(self, paths: AgentPaths, record: GatewayRecord) -> NoReturn:
        """Our start died before it was ready: ``RUNTIME_CRASH_LOOP`` once it has exited
        ``CRASH_LOOP_EXITS`` times without being ready in between (not retried: the
        deployment reports it now, not at its deadline), else ``GATEWAY_EXITED`` (retried)."""
        noted = self._noted_exit(paths, record)
        replace(noted, state=FAILED).write(paths.record)
        if noted.exits >= CRASH_LOOP_EXITS:
            logger.warning("local compute: the gateway of %s (revision %s) is crash-looping (%s exits, status %s)",
                           record.agent_id, record.revision_id, noted.exits, noted.exit_status)
            raise ComputeError(RUNTIME_CRASH_LOOP, retryable=False)
        raise ComputeError("GATEWAY_EXITED", retryable=True)

    @staticmethod
    def _restart_is_due(record: GatewayRecord) -> bool:
        backoff = min(MAX_RESTART_BACKOFF_SECONDS, 5.0 * 2 ** record.restarts)
        return time.time() - record.last_restart_at >= backoff

    def restart_revision(self, revision: RevisionRef, context: RevisionContext) -> None:
        """Restart the dead gateway that served ``revision``; an Agent whose folder is busy (a
        worker is starting or stopping its gateway) is left for the next pass."""
        paths = self.agent_paths(revision.agent_id)
        with self._agent_lock(paths, wait=False) as taken:
            if not taken:
                return
            record = GatewayRecord.read(paths.record)
            if (record is None or record.state != RUNNING or record.revision_id != revision.id or record.alive()
                    or not self._restart_is_due(record)):
                return
            logger.info("local compute: restarting the dead gateway of %s (revision %s)",
                        record.agent_id, record.revision_id)
            started = self._start(paths, revision, context, previous=record)
            replace(started, restarts=record.restarts + 1, last_restart_at=time.time(),
                    restart_count=record.restart_count + 1).write(paths.record)

    # --- starting -----------------------------------------------------------------------------------
    def _readiness(self, revision: RevisionRef, *, ready: bool) -> Readiness:
        warnings = PluginDelivery.warnings(self.agent_paths(revision.agent_id).revision_dir(revision.id))
        return Readiness(namespace_id=revision.namespace_id, agent_id=revision.agent_id, revision_id=revision.id,
                         ready=ready, pending_reason=None if ready else PENDING_CODE, warnings=warnings)

    def plugin_delivery(self, paths: AgentPaths) -> PluginDelivery:
        return PluginDelivery(runtime=self.runtime, agent_root=paths.root, state_dir=paths.state, home=paths.home,
                              log_path=paths.logs / "plugins.log")

    def _stage_verified(self, paths: AgentPaths, revision: RevisionRef, context: RevisionContext, *,
                        port: int) -> PreparedPlugins | None:
        """Install the revision's plugins (once per revision, cached by spec), stage its config
        with their policy, and verify the runtime's effective plugin state on that config."""
        delivery = self.plugin_delivery(paths)
        prepared = delivery.prepare(revision.spec, paths.revision_dir(revision.id))
        path = self._stage(paths, revision, context, port=port, plugins=prepared)
        if prepared is not None:
            config = json.loads(path.read_text())
            if not PluginDelivery.verified(paths.revision_dir(revision.id), config):
                delivery.verify(prepared, config, path)
        return prepared

    def _stage(self, paths: AgentPaths, revision: RevisionRef, context: RevisionContext, *, port: int,
               plugins: PreparedPlugins | None = None) -> Path:
        """Render the revision's config for ``port`` (written again only if that changes it),
        with the plugin selections translated in (failed installs disabled)."""
        document = revision.spec.configuration_document()
        if plugins is not None:
            document = plugins.translate(document)
        config = render_config(document, port=port, paths=paths,
                               deliver_model_key=context.harness_secret is not None)
        text = json.dumps(config, indent=2, sort_keys=True) + "\n"
        path = paths.config(revision.id)
        try:
            if path.read_text() == text:
                return path
        except OSError:
            pass
        write_private(path, text)
        return path

    def _write_initial_workspace(self, paths: AgentPaths, revision: RevisionRef) -> None:
        """Before the Agent's first start only; existing files are never overwritten."""
        if paths.workspace_marker.exists():
            return
        for name, content in sorted(revision.initial_workspace_files.items()):
            if "/" in name or "\\" in name or name.startswith(".") or not isinstance(content, str):
                continue
            target = paths.workspace / name
            if not target.exists():
                target.write_text(content)
        write_private(paths.workspace_marker, now_text() + "\n")

    def _choose_port(self, agent_id: str, preferred: int | None, *, reserve_own_candidate: bool = False) -> int:
        """A base port no other Agent's running record (nor any candidate: ``verify_candidate``)
        claims and nothing listens on. A candidate also avoids its own Agent's serving port."""
        reserved = set()
        agents = self.data_dir / "agents"
        for record_path in [*agents.glob("*/gateway.json"), *agents.glob("*/candidate/gateway.json")]:
            other = GatewayRecord.read(record_path)
            if other is None or other.state != RUNNING:
                continue
            if other.agent_id != agent_id or reserve_own_candidate or record_path.parent.name == "candidate":
                reserved.add(other.port)
        candidates = ([preferred] if preferred in self.ports else []) + list(self.ports)
        for port in candidates:
            if port is not None and port not in reserved and supervisor.port_is_free(port):
                return port
        raise ComputeError("NO_FREE_GATEWAY_PORT", retryable=True)

    def _start(self, paths: AgentPaths, revision: RevisionRef, context: RevisionContext,
               *, previous: GatewayRecord | None) -> GatewayRecord:
        try:
            node, entry = self.runtime.require()
        except RuntimeMissing:
            raise ComputeError("RUNTIME_NOT_INSTALLED", retryable=True) from None
        paths.ensure()
        self._write_initial_workspace(paths, revision)
        # Plugins first, outside the ports lock: an install can take a minute.
        delivery = self.plugin_delivery(paths)
        plugins = delivery.prepare(revision.spec, paths.revision_dir(revision.id))
        with supervisor.file_lock(self.data_dir / "agents" / ".ports.lock", timeout=30.0) as taken:
            if not taken:
                raise ComputeError("AGENT_RUNTIME_BUSY", retryable=True)
            port = self._choose_port(revision.agent_id, previous.port if previous else None)
            config_path = self._stage(paths, revision, context, port=port, plugins=plugins)
            argv = [str(node), str(entry), "gateway", "--port", str(port)]

            key = self._redaction_key(paths)

            def spawn(values: dict[str, str]) -> tuple[supervisor.ProcessIdentity, LogEpoch]:
                env = child_environment(runtime=self.runtime, paths=paths, config_path=config_path, port=port,
                                        secret_values=values)
                epoch = LogEpoch(offset=_file_size(paths.gateway_log),
                                 fingerprints=frozenset(fingerprint(key, value) for value in values.values() if value))
                try:
                    return supervisor.spawn(argv, env=env, cwd=paths.root, log_path=paths.gateway_log,
                                            exit_path=paths.exit_record), epoch
                except OSError:
                    raise ComputeError("GATEWAY_SPAWN_FAILED", retryable=True) from None

            process, epoch = self._with_secret_values(self._secret_items(revision, context), spawn)
            epochs = (*(previous.log_epochs if previous else ()), epoch)[-MAX_LOG_EPOCHS:]
            record = GatewayRecord(agent_id=revision.agent_id, revision_id=revision.id, port=port, state=RUNNING,
                                   process=process, started_at=time.time(),
                                   restarts=previous.restarts if previous else 0,
                                   last_restart_at=previous.last_restart_at if previous else 0.0,
                                   log_epochs=epochs, **self._exits_carried(previous, revision))
            record.write(paths.record)
        logger.info("local compute: started gateway pid %s for %s (revision %s) on 127.0.0.1:%s",
                    process.pid, revision.agent_id, revision.id, port)
        if plugins is not None:
            # The effective plugin state, checked while the gateway starts (a cold CLI start of
            # its own); the start is reported only once it passed, so the gateway is never ready
            # on a config the runtime reads otherwise.
            config = json.loads(config_path.read_text())
            if not PluginDelivery.verified(paths.revision_dir(revision.id), config):
                try:
                    delivery.verify(plugins, config, config_path)
                except ComputeError:
                    supervisor.stop(process, grace=self.stop_grace, titles=GATEWAY_TITLES)
                    replace(record, state=FAILED).write(paths.record)
                    raise
        return record

    @staticmethod
    def _exits_carried(previous: GatewayRecord | None, revision: RevisionRef) -> dict[str, Any]:
        """A new start of the same revision keeps counting its exits (a crash loop spans
        restarts and attempts); a start of another revision begins at none."""
        if previous is None or previous.revision_id != revision.id:
            return {}
        return {"exits": previous.exits, "exit_status": previous.exit_status}

    def _secret_items(self, revision: RevisionRef, context: RevisionContext) -> list[tuple[str, SecretReference]]:
        """(environment variable, Secret) pairs: bound Secrets, the model key, the password."""
        items = sorted(context.secret_environment.items())
        if context.harness_secret is not None:
            target = model_key_env(revision.spec.configuration)
            if target is None:
                raise ComputeError("HARNESS_AUTH_PROVIDER_UNSUPPORTED", retryable=False)
            items.append((target, context.harness_secret))
        if context.gateway_password is None:
            raise ComputeError("RUNTIME_CREDENTIALS_MISSING", retryable=True)
        items.append((PASSWORD_ENV, context.gateway_password))
        return items

    @staticmethod
    def _redaction_key(paths: AgentPaths) -> bytes:
        """The Agent's fingerprint key (``read_logs``), made on its first spawn, kept beside its logs."""
        try:
            return paths.redaction_key.read_bytes()
        except FileNotFoundError:
            write_private(paths.redaction_key, token_hex(32))
            return paths.redaction_key.read_bytes()

    @staticmethod
    def _with_secret_values(items: list[tuple[str, SecretReference]], consumer: Callable[[dict[str, str]], T]) -> T:
        """Call ``consumer`` with every value, each read by ``with_value`` and held only
        for the duration of the call."""

        def step(index: int, values: dict[str, str]) -> T:
            if index == len(items):
                return consumer(values)
            name, reference = items[index]
            return get_secret_driver(reference.driver_id).with_value(
                reference.backend_name, lambda value: step(index + 1, {**values, name: value}))

        try:
            return step(0, {})
        except SecretValueMissing:
            raise ComputeError("SECRET_VALUE_MISSING", retryable=False) from None
        except SecretDriverError:
            raise ComputeError("SECRET_STORE_UNAVAILABLE", retryable=True) from None

    # --- readiness --------------------------------------------------------------------------------
    def _check_starting(self, paths: AgentPaths, record: GatewayRecord, revision: RevisionRef) -> Readiness:
        if supervisor.readyz(record.port):
            if not record.ready_seen:
                replace(record, ready_seen=True, ready_at=time.time(), exits=0).write(paths.record)
            return self._readiness(revision, ready=True)
        if time.time() - record.started_at > self.ready_timeout and record.process is not None:
            supervisor.stop(record.process, grace=self.stop_grace, titles=GATEWAY_TITLES)
            replace(record, state=FAILED, exited_at=time.time()).write(paths.record)
            raise ComputeError("GATEWAY_START_TIMEOUT", retryable=True)
        return self._readiness(revision, ready=False)

    def _await_ready(self, paths: AgentPaths, record: GatewayRecord, revision: RevisionRef) -> Readiness:
        """Poll ``/readyz`` until it answers 200 or the start's time budget is spent (then
        report not ready: still starting). A start found already past its budget is stopped
        and fails, so the next attempt starts afresh."""
        deadline = record.started_at + self.ready_timeout
        if time.time() >= deadline:
            return self._check_starting(paths, record, revision)
        while True:
            if supervisor.readyz(record.port):
                if not record.ready_seen:
                    replace(record, ready_seen=True, ready_at=time.time(), exits=0).write(paths.record)
                return self._readiness(revision, ready=True)
            if not record.alive():
                self._exited(paths, record)
            if time.time() >= deadline:
                return self._readiness(revision, ready=False)
            time.sleep(0.5)
