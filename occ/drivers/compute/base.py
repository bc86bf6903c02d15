"""The ComputeDriver contract: how the worker turns revisions into running gateways.

Drivers are pure: they import no model, service, selector or worker module, read none of
OCC's tables and keep no state in them. Everything they need arrives as arguments: refs
built by the jobs from OCC's rows, and references (never values) to Secrets. A driver that
must deliver a value reads it through the SecretDriver's ``with_value`` at the moment it
starts a process or writes a workload. Drivers are idempotent ("ensure" semantics,
deterministic names from our ids).

Runtime credentials OCC keeps for a driver (``runtime_credential_purposes``, e.g. the local
gateway's password) are created by the worker as runtime-credential Secrets and handed over
as references: ``AgentRef.runtime_credentials`` and ``RevisionContext.gateway_password``.
What the driver itself supervises it reports from ``maintain``; the worker's maintenance job
compares that with the desired state and calls ``restart_revision`` where a gateway should
still run.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal

from occ.documents import DriverPin, PluginWarning, RevisionSpec, SmokeConversation

# The pinned OpenClaw runtime a revision records as its harness version (a driver that
# runs another one overrides ``ComputeDriver.harness_version``).
OPENCLAW_VERSION = "2026.9.6"
# The ``purpose`` of the Agent's driver-owned gateway password (a runtime-credential Secret).
GATEWAY_PASSWORD_PURPOSE = "gateway-password"


class ComputeError(Exception):
    """A driver call failed. ``retryable`` failures consume an attempt and back off;
    others fail the work permanently. ``code`` is a safe token (``[A-Z0-9_]``, ≤64)."""

    def __init__(self, code: str, *, retryable: bool = True, message: str = "",
                 gateway_code: str | None = None) -> None:
        super().__init__(message or code)
        self.code = code
        self.retryable = retryable
        # ``operator_call``: the gateway's own code for a refused method (``GatewayRpcError.gateway_code``).
        self.gateway_code = gateway_code


class ComputeUnknownOutcome(ComputeError):
    """The call may or may not have taken effect (e.g. the response was lost). The next
    attempt must observe the target before acting again."""

    def __init__(self, code: str = "COMPUTE_OUTCOME_UNKNOWN", message: str = "") -> None:
        super().__init__(code, retryable=True, message=message)


@dataclass(frozen=True)
class NamespaceRef:
    id: str
    name: str
    existing_namespace: str | None = None


@dataclass(frozen=True)
class RevisionRef:
    """What a driver needs of an immutable AgentRevision: ids and its admitted spec."""

    id: str
    namespace_id: str
    agent_id: str
    number: int
    spec: RevisionSpec
    # Staged initial workspace files, written before the first start (not secret).
    initial_workspace_files: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class SecretReference:
    """A Secret by metadata only: the driver resolves the value itself, at use."""

    secret_id: str
    driver_id: str
    backend_name: str


@dataclass(frozen=True)
class AgentRef:
    id: str
    namespace_id: str
    name: str
    # purpose -> the runtime-credential Secret OCC keeps for the driver (its
    # ``runtime_credential_purposes``), as far as the worker has created them.
    runtime_credentials: Mapping[str, SecretReference] = field(default_factory=dict)


@dataclass(frozen=True)
class RevisionContext:
    """Resolved references for prepare/activate. Never holds credential values."""

    harness_auth_method: str | None
    harness_secret: SecretReference | None
    # environment variable name -> Secret reference (Configuration secretBindings)
    secret_environment: dict[str, SecretReference] = field(default_factory=dict)
    # the Agent's driver-owned gateway password (a runtime credential), when provisioned
    gateway_password: SecretReference | None = None


@dataclass(frozen=True)
class NamespaceResult:
    namespace_id: str
    done: bool  # ready (ensure) or deleted (delete)
    pending_reason: str | None = None


@dataclass(frozen=True)
class Readiness:
    namespace_id: str
    agent_id: str
    revision_id: str
    ready: bool
    pending_reason: str | None = None  # a progress code when not ready
    warnings: tuple[PluginWarning, ...] = ()  # selections that started without their plugin


@dataclass(frozen=True)
class CredentialObservation:
    """What a read-only look at an Agent's driver-owned runtime credentials found: whether
    they exist, and the id of the Agent that owns them (``None`` when not found)."""

    found: bool
    owner: str | None = None


@dataclass(frozen=True)
class RestartDue:
    """A gateway the driver supervises that died while serving ``revision_id`` and whose
    restart backoff has elapsed. Whether it should run again is the worker's decision."""

    agent_id: str
    revision_id: str


@dataclass(frozen=True)
class DiagnosticCheck:
    component: str
    check: str
    state: Literal["succeeded", "failed", "unknown"]
    checked_at: str | None = None
    code: str | None = None


def now_text() -> str:
    """This moment as the drivers write times (a check's ``checked_at``, a gateway's
    ``since``): RFC 3339 UTC with milliseconds, ``YYYY-MM-DDTHH:MM:SS.mmmZ``."""
    value = datetime.now(UTC)
    return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"


@dataclass(frozen=True)
class ChatMessage:
    """One turn of a conversation with an Agent's gateway (plain text, never stored by OCC)."""

    role: Literal["user", "assistant"]
    content: str


# --- verifying a candidate before cutover ----------------------------------------------------

# The codes a failed ``verify_candidate`` ends a deployment with (the serving revision keeps serving).
VERIFY_CONFIG_REFUSED = "RUNTIME_CONFIG_REFUSED"
VERIFY_START_FAILED = "RUNTIME_START_FAILED"
VERIFY_CREDENTIAL_REFUSED = "MODEL_CREDENTIAL_REFUSED"
VERIFY_MODEL_UNREACHABLE = "MODEL_UNREACHABLE"
VERIFY_SMOKE_FAILED = "SMOKE_TEST_FAILED"
VERIFY_CODES = frozenset({VERIFY_CONFIG_REFUSED, VERIFY_START_FAILED, VERIFY_CREDENTIAL_REFUSED,
                          VERIFY_MODEL_UNREACHABLE, VERIFY_SMOKE_FAILED})
# A gateway that keeps exiting (``RuntimeObservation.crash_loop``; an activation fails with it).
RUNTIME_CRASH_LOOP = "RUNTIME_CRASH_LOOP"
# Bounds of a verdict's evidence: lines, each cut to this many characters (after redaction).
VERIFY_EVIDENCE_LINES = 20
VERIFY_EVIDENCE_CHARS = 500


@dataclass(frozen=True)
class CandidateVerdict:
    """What ``verify_candidate`` found. ``passed`` false: ``code`` (one of ``VERIFY_CODES``),
    ``check`` (``config``, ``start``, ``model``, ``smoke``) and ``evidence``, lines already
    redacted of every secret value the candidate was given. ``checks`` names the checks that
    ran, in order; ``skipped`` is true when the driver does not verify candidates."""

    passed: bool
    code: str | None = None
    check: str | None = None
    evidence: tuple[str, ...] = ()
    checks: tuple[str, ...] = ()
    skipped: bool = False


# --- observing a gateway (the console's Runtime panel and Logs tab) ----------------------------

RuntimeState = Literal["running", "starting", "stopped", "crashed"]
RUNTIME_STATES: tuple[RuntimeState, ...] = ("running", "starting", "stopped", "crashed")


@dataclass(frozen=True)
class RuntimeObservation:
    """What the driver sees of an Agent's gateway right now (read-only, nothing stored).

    ``state``: ``running`` (the gateway answers its readiness check), ``starting`` (its process
    is up but not ready yet), ``stopped`` (nothing runs, on purpose, or nothing ever ran) or
    ``crashed`` (it should run and does not: exited, killed, failed to start, or restarting
    after a crash). ``since`` is when it entered that state, when the driver knows.
    ``revision_id`` is the revision the gateway serves (running, starting) or last served
    (stopped, crashed); ``None`` when there never was one. ``restarts`` counts the driver's
    automatic restarts since the gateway was last started by a deploy or a start.
    ``memory_bytes`` (resident memory) and ``cpu_percent`` (recent use, percent of one core; may
    exceed 100 on several cores) cover every process of the gateway, ``None`` when not running
    or not measurable.
    """

    state: RuntimeState
    observed_at: datetime
    since: datetime | None = None
    revision_id: str | None = None
    restarts: int = 0
    memory_bytes: int | None = None
    cpu_percent: float | None = None
    # ``crash_loop``: it exited again and again without becoming ready (``RUNTIME_CRASH_LOOP``);
    # ``exit_status`` of its last exit when known (negative: the signal that killed it).
    crash_loop: bool = False
    exit_status: int | None = None


# Bounds of one ``read_logs`` answer (a driver may return less, never more).
LOG_MAX_LINES = 500
LOG_MAX_BYTES = 256 * 1024
# One line is cut to this many characters (after redaction) and marked with LOG_LINE_CUT.
LOG_MAX_LINE_CHARS = 4000
LOG_LINE_CUT = " [line cut]"
# What stands in for a secret value in a log line.
LOG_REDACTED = "[redacted]"


@dataclass(frozen=True)
class LogPage:
    """Recent lines of the gateway's output, every secret value it was given replaced by
    ``LOG_REDACTED``. ``cursor`` is opaque: pass it back to get the lines written after these
    (follow mode); it is valid for the same Agent and driver only. ``skipped`` is true when lines
    were left out between the cursor (or the log's start) and these, because of the bounds;
    ``reset`` when the cursor no longer applied (the log was replaced) and this is a fresh tail.
    ``withheld`` counts lines the driver could not vouch for (a secret they may contain is no
    longer readable, so it cannot be redacted) and left out."""

    lines: tuple[str, ...]
    cursor: str
    skipped: bool = False
    reset: bool = False
    withheld: int = 0


# The codes ``ComputeDriver.chat`` fails with (a ``ComputeError``, ``retryable=False``).
CHAT_GATEWAY_NOT_RUNNING = "GATEWAY_NOT_RUNNING"
CHAT_TIMEOUT = "GATEWAY_TIMEOUT"
CHAT_MODEL_REFUSED = "MODEL_REFUSED"
CHAT_UNSUPPORTED = "CHAT_UNSUPPORTED"
# ``ComputeDriver.operator_call`` fails with CHAT_GATEWAY_NOT_RUNNING, this, or a code of ``gateway_rpc``.
OPERATOR_UNSUPPORTED = "GATEWAY_RPC_UNSUPPORTED"


class ComputeDriver(ABC):
    driver_id: str
    implementation: str
    activation_order: Literal["afterCommit", "beforeCommit"] = "afterCommit"
    harness_version: str = OPENCLAW_VERSION
    # Credentials the worker keeps for this driver, one runtime-credential Secret per purpose
    # and Agent, created before ``provision_runtime_credentials`` and handed over as references.
    runtime_credential_purposes: tuple[str, ...] = ()

    @property
    def pin(self) -> DriverPin:
        """What a revision admitted for this driver records (``RevisionSpec.compute``)."""
        return DriverPin(id=self.driver_id, implementation=self.implementation)

    # --- required ------------------------------------------------------------------------
    @abstractmethod
    def ensure_namespace(self, namespace: NamespaceRef) -> NamespaceResult: ...

    @abstractmethod
    def delete_namespace(self, namespace: NamespaceRef) -> NamespaceResult: ...

    @abstractmethod
    def prepare_revision(self, revision: RevisionRef, context: RevisionContext) -> Readiness:
        """Create or reuse the Agent's gateway and stage this revision. ``ready=False`` keeps
        the work pending (the attempt is refunded)."""

    @abstractmethod
    def stop_revision(self, revision: RevisionRef) -> None:
        """Stop serving this revision; keep state, credentials and workspace. Idempotent."""

    @abstractmethod
    def retire_revision(self, revision: RevisionRef) -> None:
        """Remove this revision's staged resources; never touch a gateway that now serves
        a newer revision. Idempotent."""

    # --- activation ----------------------------------------------------------------------
    @abstractmethod
    def activate_revision(self, revision: RevisionRef, context: RevisionContext) -> Readiness:
        """Make the gateway serve this revision (after the active pointer commit). Repeatable:
        does nothing when it already serves it."""

    @abstractmethod
    def deactivate_revision(self, revision: RevisionRef) -> None:
        """Shut down a candidate that was never published."""

    @abstractmethod
    def validate_harness_auth(self, *, method: str | None, spec: RevisionSpec) -> None:
        """Side-effect free admission check; raise ComputeError(retryable=False) to refuse."""

    # --- runtime credentials ------------------------------------------------------------
    @abstractmethod
    def runtime_credentials_status(self, agent: AgentRef) -> bool:
        """Whether the Agent's transport credentials exist (those OCC keeps: the references in
        ``agent.runtime_credentials`` and their values)."""

    @abstractmethod
    def provision_runtime_credentials(self, agent: AgentRef) -> None:
        """Create missing driver-owned credentials; never overwrite existing ones. Those OCC
        keeps for the driver already exist (the worker created them): the driver checks the
        references it is handed. Idempotent."""

    @abstractmethod
    def delete_runtime_credentials(self, agent: AgentRef) -> None:
        """The Agent's teardown on the driver's side. The runtime-credential Secrets OCC keeps
        are removed by the worker afterwards, with the Agent."""

    @abstractmethod
    def observe_runtime_credentials(self, agent: AgentRef) -> CredentialObservation:
        """Read-only: whether the Agent's runtime credentials exist and which Agent owns them.
        The next attempt after an unknown outcome looks here before it sends anything again."""

    # --- observation ----------------------------------------------------------------------
    @abstractmethod
    def get_gateway_endpoint(self, revision: RevisionRef) -> str | None: ...

    @abstractmethod
    def diagnose(self, revision: RevisionRef) -> list[DiagnosticCheck]:
        """Read-only evidence about the revision's runtime; changes nothing."""

    # --- talking to the gateway -----------------------------------------------------------
    def chat(self, *, namespace_id: str, agent_id: str, revision_id: str, gateway_password: SecretReference | None,
             messages: Sequence[ChatMessage], timeout: float, client_address: str | None = None) -> Iterator[str]:
        """Send the conversation to the gateway serving ``revision_id`` (its OpenAI-compatible
        chat endpoint, reached from OCC's side only) and yield the reply's text as it streams.
        Fails with a ``ComputeError`` whose code is one of ``CHAT_*``; the gateway's address and
        password never leave the driver. ``timeout`` bounds each wait for the next bytes.
        ``client_address`` is the address of the person OCC chats for, as OCC's web tier saw it
        (``occ.iam.sign_in.client_address``; None when unknown): a driver whose gateway is reached
        through a proxy names the client to it (the Kubernetes driver), one on loopback ignores it."""
        raise ComputeError(CHAT_UNSUPPORTED, retryable=False)

    def operator_call(self, revision: RevisionRef, *, gateway_password: SecretReference | None, method: str,
                      params: Mapping[str, object], scopes: Sequence[str], timeout: float) -> object:
        """One method of the operator RPC of the gateway serving ``revision``
        (``occ.drivers.compute.gateway_rpc``), as an operator holding only ``scopes``; its JSON payload.
        The driver finds the gateway and reads its password for this one call; neither leaves
        the driver. Fails with a ``ComputeError`` (``retryable=False``) whose code is
        ``GATEWAY_NOT_RUNNING``, ``GATEWAY_RPC_UNSUPPORTED`` or one of ``gateway_rpc``'s;
        ``timeout`` bounds the whole call."""
        raise ComputeError(OPERATOR_UNSUPPORTED, retryable=False)

    # --- verifying a candidate before cutover -----------------------------------------------
    def verify_candidate(self, revision: RevisionRef, context: RevisionContext, *,
                         smoke: Sequence[SmokeConversation] = ()) -> CandidateVerdict:
        """Prove ``revision`` in isolation before the serving gateway is touched: its config is
        accepted by the pinned runtime, a short-lived candidate gateway with its config and
        Secrets (its own port or Pod, no claim on the Agent's state) becomes ready, its model
        credentials work through it (the cheapest call), and each ``smoke`` conversation's
        reply matches. The candidate is removed before returning, whatever happened; the
        serving gateway is never touched. A failed check is a verdict, not an error; a
        ``ComputeError`` means the check could not be made (e.g. no free port: retryable).
        Drivers that cannot verify return a skipped verdict (the default)."""
        return CandidateVerdict(passed=True, skipped=True)

    # --- observing the gateway ----------------------------------------------------------------
    def observe_runtime(self, agent: AgentRef) -> RuntimeObservation:
        """Read-only: the state of the Agent's gateway, the revision it serves, its restarts and
        its memory and CPU (``RuntimeObservation``). Never starts, stops or writes anything;
        fails with a ``ComputeError`` when the backend cannot be asked."""
        raise ComputeError("OBSERVE_UNSUPPORTED", retryable=False)

    def read_logs(self, agent: AgentRef, *, secrets: Sequence[SecretReference], cursor: str | None = None,
                  max_lines: int = LOG_MAX_LINES, max_bytes: int = LOG_MAX_BYTES) -> LogPage:
        """The gateway's recent output lines, oldest first: without ``cursor`` the last ones (at
        most ``max_lines`` lines and ``max_bytes`` bytes), with it those written since (the
        newest within the same bounds, ``skipped`` when more were written).

        Filtered of secrets by construction: every value in ``secrets`` (all the Agent's
        revisions delivered, and its runtime credentials; each read through the SecretDriver's
        ``with_value`` for this call only) and any value the driver itself put into the gateway's
        environment or config is replaced by ``LOG_REDACTED`` before a line is returned; a line the
        driver cannot redact is withheld, never returned. Lines are text without control
        characters, each at most ``LOG_MAX_LINE_CHARS``. Fails with a ``ComputeError``."""
        raise ComputeError("LOGS_UNSUPPORTED", retryable=False)

    # --- maintenance ----------------------------------------------------------------------
    def maintain(self) -> list[RestartDue]:
        """Periodic upkeep of what the driver supervises (from beat, through the worker's
        maintenance job): returns the dead gateways due for a restart. Reads no OCC state."""
        return []

    def restart_revision(self, revision: RevisionRef, context: RevisionContext) -> None:
        """Restart the dead gateway that served ``revision`` (the worker checked that it
        should still run). A gateway found alive, busy, or serving another revision is left
        alone. Only drivers whose ``maintain`` reports restarts implement it."""
        raise ComputeError("RESTART_UNSUPPORTED", retryable=False)
