"""The PluginDriver contract and the typed values that cross it.

One driver is selected per installation (``OCC_PLUGIN_DRIVER``; ``occ.drivers.plugins.registry``). It
answers five questions, each with values defined here and never with a wire dict:

- **capabilities**: which policy controls exist (per scope: enablement, approval modes,
  reviewers; approvers; the driver's own policy schema), whether discovery needs a
  credential, and the driver's identity;
- **discovery** (``discover``, ``details``): catalog pages for a query and an opaque cursor,
  one entry with its tools loaded on demand; a credential value, when the driver needs one,
  is an argument held for that call only (the caller resolved it through the SecretDriver);
- **validation** (``validate_policies``): static checks of the selections (shape beyond the
  command's, supported modes per scope, reviewers, driver-policy combinations, known ids);
  catalog membership, authentication and tool ownership are startup checks;
- **startup** (``resolve``, ``translate``): the native metadata of the selections (bundled or
  an exact npm spec with its integrity) as a ``PluginRuntimeSpec``, and that spec written into
  the runtime's own configuration document;
- **install outcomes** (``evaluate_installs``): what a compute driver observed installing
  the spec, as warnings (``PLUGIN_INSTALL_FAILED``, ``PLUGIN_AUTH_REQUIRED``) or an ordinary
  startup failure (``PluginStartupFailure``).

Drivers are pure: they import nothing of OCC but ``occ.openclaw`` and the leaves.

One module: the contract and every typed value that crosses it, so a driver author reads one
file; the values are small frozen dataclasses without behaviour. The selections a driver
validates, resolves and translates, and the warnings it returns, are stored documents
(``occ.documents.plugins``: ``PluginSelection``, ``ToolPolicy``, ``PluginApprover``, ``PluginWarning``).
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from occ.documents import (
    ApprovalMode,
    DriverPin,
    PluginApprover,
    PluginSelection,
    PluginWarning,
    Reviewer,
    Selections,
)
from occ.errors import NotImplementedYet, OccError

DiscoveryCredentialNeed = Literal["required", "none"]


# --- identity and capabilities ---------------------------------------------------------------


@dataclass(frozen=True)
class DriverIdentity:
    """Which driver (``id``, the ``OCC_PLUGIN_DRIVER`` name) and which implementation of it;
    a deploy snapshot records both."""

    id: str
    implementation: str

    @property
    def pin(self) -> DriverPin:
        """What a revision's plugin snapshot records of the driver that admitted its selections."""
        return DriverPin(id=self.id, implementation=self.implementation)


@dataclass(frozen=True)
class ScopeCapabilities:
    """The controls one policy scope (a plugin's ``toolDefaults``, or one tool) supports."""

    enabled: bool
    approval: tuple[ApprovalMode, ...]
    reviewer: tuple[Reviewer, ...] = ()


@dataclass(frozen=True)
class ApproverCapabilities:
    agent: bool  # the Agent's default ``pluginApprovers``
    plugin: bool  # a selection's own ``approvers``
    tools: bool  # a tool's ``approvers``


@dataclass(frozen=True)
class PolicyCapabilities:
    """What the console generates its policy controls from, and what validation enforces."""

    driver: DriverIdentity
    approvers: ApproverCapabilities
    tool_defaults: ScopeCapabilities
    tools: ScopeCapabilities
    driver_policy_schema: Mapping[str, Any]
    discovery_credential: DiscoveryCredentialNeed
    # What a deployment of this driver's selections can and cannot do here, said before anyone
    # deploys (the console shows it); None when there is nothing to say.
    deployment_note: str | None = None


# --- discovery ------------------------------------------------------------------------------


class DiscoveryCredential:
    """A credential value for one discovery call (a transient token, or a bound Secret's value
    read inside the SecretDriver's ``with_value``). Never printed, never stored."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "DiscoveryCredential(***)"

    __str__ = __repr__


@dataclass(frozen=True)
class DiscoveryQuery:
    """``q``: whole-catalog search (empty lists everything); ``cursor``: the opaque
    ``next_cursor`` of the page before, for the same ``q``."""

    q: str = ""
    cursor: str | None = None


@dataclass(frozen=True)
class Link:
    label: str
    url: str


@dataclass(frozen=True)
class PluginTool:
    id: str  # opaque to OCC; the key of a selection's ``tools``
    owner_id: str  # the native plugin that provides it
    name: str
    description: str | None = None
    available: bool = True
    unavailable_reason: str | None = None
    writes: bool | None = None
    destructive: bool | None = None


@dataclass(frozen=True)
class CatalogEntry:
    """One plugin as discovery shows it. ``id`` is the selection key; ``remote_id`` what
    ``details`` takes. ``tools``: ``None`` unknown (not loaded), ``()`` observed empty."""

    id: str
    remote_id: str
    name: str
    description: str | None = None
    logo_url: str | None = None
    website_url: str | None = None
    privacy_policy_url: str | None = None
    terms_of_service_url: str | None = None
    available: bool = True
    unavailable_reason: str | None = None
    unavailable_help: Link | None = None
    selectable_without_tools: bool = False
    tools: tuple[PluginTool, ...] | None = None


@dataclass(frozen=True)
class SetupGuidance:
    message: str
    links: tuple[Link, ...] = ()


@dataclass(frozen=True)
class CatalogPage:
    plugins: tuple[CatalogEntry, ...]
    next_cursor: str | None = None
    setup: SetupGuidance | None = None


class PluginDiscoveryError(OccError):
    status = 503
    code = "PLUGIN_DISCOVERY_UNAVAILABLE"


class PluginDiscoveryCredentialsRejected(PluginDiscoveryError):
    status = 400
    code = "PLUGIN_DISCOVERY_CREDENTIALS_REJECTED"
    default_message = "The plugin catalog did not accept the credential, or it has no plugin access."


class PluginDiscoveryRateLimited(PluginDiscoveryError):
    status = 429
    code = "PLUGIN_DISCOVERY_RATE_LIMITED"
    default_message = "The plugin catalog is limiting requests. Try again in a minute."


class PluginDiscoveryUnavailable(PluginDiscoveryError):
    status = 503
    code = "PLUGIN_DISCOVERY_UNAVAILABLE"
    default_message = "The plugin catalog could not be reached. Check the server's plugin service access."


class PluginDiscoveryInvalidResponse(PluginDiscoveryError):
    status = 503
    code = "PLUGIN_DISCOVERY_INVALID_RESPONSE"
    default_message = "The plugin catalog answered with something OCC cannot use. Try again later."


class PluginDiscoveryUnsupported(NotImplementedYet):
    default_message = "This installation's plugin driver does not offer catalog browsing."


class PluginNotFound(OccError):
    status = 404
    code = "NOT_FOUND"
    default_message = "The plugin is not in the catalog."


# --- selections: ``PluginSelection``, ``ToolPolicy`` and ``PluginApprover`` are stored documents
# (``occ.documents.plugins``), the values a driver validates, resolves and translates.


@dataclass(frozen=True)
class PolicyProblem:
    """A refused selection: ``path`` from the request body's root (``("plugins", id,
    "toolDefaults", "approval")``), a ``DetailCode`` and our message."""

    path: tuple[str | int, ...]
    message: str
    code: str = "INVALID_VALUE"


# --- startup: native metadata, installs, warnings ---------------------------------------------


@dataclass(frozen=True)
class NpmSource:
    """An exact npm spec: installed with ``openclaw plugins install npm:<package>@<version>
    --pin`` (``force`` where the source needs it) and verified against ``integrity``."""

    package: str
    version: str
    integrity: str
    force: bool = False

    @property
    def spec(self) -> str:
        return f"npm:{self.package}@{self.version}"


@dataclass(frozen=True)
class NativePlugin:
    """What one selection is for the runtime: its native plugin id, where it comes from
    (``bundled`` with the runtime, ``npm``, or ``hosted``: a Codex plugin that the Agent's own
    Codex harness fetches with its ChatGPT sign-in, nothing for OCC to install), and the tool
    ids it owns."""

    selection_id: str
    native_id: str
    source: Literal["bundled", "npm", "hosted"]
    npm: NpmSource | None = None
    tools: tuple[str, ...] = ()


@dataclass(frozen=True)
class PluginRuntimeSpec:
    """A revision's plugins as startup resolved them: the driver, the frozen selections, and
    each selection's native metadata. Non-secret: a compute driver writes it to a private
    per-revision file (``to_json``) or projects it into its workload."""

    driver: DriverIdentity
    selections: Mapping[str, PluginSelection]
    natives: Mapping[str, NativePlugin]

    def installs(self) -> list[NativePlugin]:
        """The enabled selections that need installing, in selection order."""
        return [native for key, native in self.natives.items()
                if native.source == "npm" and self.selections[key].enabled]

    def hosted(self) -> list[NativePlugin]:
        """The enabled selections that only the Agent's own Codex harness can fetch."""
        return [native for key, native in self.natives.items()
                if native.source == "hosted" and self.selections[key].enabled]

    def to_json(self) -> str:
        return json.dumps(_spec_document(self), indent=2, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> PluginRuntimeSpec:
        return _spec_from_document(json.loads(text))


@dataclass(frozen=True)
class InstalledPlugin:
    """What the runtime recorded after an install (read back, not what was asked)."""

    native_id: str
    package: str
    version: str
    integrity: str
    install_path: str


@dataclass(frozen=True)
class InstallOutcome:
    """One attempted install. ``rejected``: the runtime confirmed it refused the spec (its
    normal non-zero exit); ``auth_required``: installed, but it needs authentication first.
    Transport loss, timeouts and malformed output are not outcomes: the installer raises
    ``PluginStartupFailure``."""

    selection_id: str
    status: Literal["installed", "rejected", "auth_required"]
    installed: InstalledPlugin | None = None


class PluginStartupFailure(Exception):
    """An ordinary startup failure (not a warning): the gateway must not become ready."""

    def __init__(self, code: str, message: str = "") -> None:
        super().__init__(message or code)
        self.code = code


# --- the contract -----------------------------------------------------------------------------


class PluginDriver(ABC):
    identity: DriverIdentity

    @abstractmethod
    def capabilities(self) -> PolicyCapabilities: ...

    @abstractmethod
    def discover(self, query: DiscoveryQuery, credential: DiscoveryCredential | None = None) -> CatalogPage:
        """One page of the catalog. Raises ``PluginDiscoveryError`` (never upstream text),
        ``PluginDiscoveryUnsupported`` when the driver cannot browse."""

    @abstractmethod
    def details(self, remote_id: str, credential: DiscoveryCredential | None = None) -> CatalogEntry:
        """One entry with its tools loaded (``tools`` is not ``None`` when known)."""

    def known_entries(self, selection_ids: Sequence[str]) -> Mapping[str, CatalogEntry]:
        """The entries of ``selection_ids`` that the driver can tell without a credential or a
        remote call (a curated catalog can; a hosted one cannot: the default, none)."""
        return {}

    @abstractmethod
    def validate_policies(self, selections: Selections,
                          plugin_approvers: Sequence[PluginApprover] | None = None) -> list[PolicyProblem]:
        """Static checks only; an empty list is valid."""

    @abstractmethod
    def resolve(self, selections: Selections) -> PluginRuntimeSpec:
        """The native metadata of ``selections`` at startup; ``PluginStartupFailure`` when a
        selection no longer resolves (a catalog change since admission)."""

    @abstractmethod
    def translate(self, spec: PluginRuntimeSpec, config: Mapping[str, Any], *,
                  failed: frozenset[str] = frozenset()) -> dict[str, Any]:
        """``config`` (the runtime document) with the spec's policy written in; ``failed``
        selections are disabled and lose their managed tool allowance."""

    @abstractmethod
    def evaluate_installs(self, spec: PluginRuntimeSpec,
                          outcomes: Sequence[InstallOutcome]) -> tuple[PluginWarning, ...]:
        """Warnings for confirmed rejections and missing authentication; raises
        ``PluginStartupFailure`` when an outcome does not match the spec (wrong id, package,
        version or integrity)."""


# --- the private spec file's document -----------------------------------------------------------


def _spec_document(spec: PluginRuntimeSpec) -> dict[str, Any]:
    natives = {}
    for key, native in spec.natives.items():
        natives[key] = {"nativeId": native.native_id, "source": native.source, "tools": list(native.tools),
                        "npm": None if native.npm is None else {
                            "package": native.npm.package, "version": native.npm.version,
                            "integrity": native.npm.integrity, "force": native.npm.force}}
    return {"driver": spec.driver.pin.document(),
            "selections": {key: selection.document() for key, selection in spec.selections.items()},
            "natives": natives}


def _spec_from_document(document: Mapping[str, Any]) -> PluginRuntimeSpec:
    natives = {}
    for key, native in document["natives"].items():
        npm = native.get("npm")
        natives[key] = NativePlugin(selection_id=key, native_id=native["nativeId"], source=native["source"],
                                    tools=tuple(native.get("tools") or ()),
                                    npm=None if npm is None else NpmSource(**npm))
    return PluginRuntimeSpec(driver=DriverIdentity(**document["driver"]),
                             selections={key: PluginSelection.model_validate(selection)
                                         for key, selection in document["selections"].items()},
                             natives=natives)
