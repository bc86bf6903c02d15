"""The Preset template: a Namespace-owned launch template for Create Agent, and its one renderer.

A template holds typed variables and the launch settings of an Agent and its Configuration, in
which a string may name a variable (``{{ vars.name }}``). :meth:`PresetTemplate.render` turns a
template and the values of its variables into a ``LaunchRequest``: the body of an Agent
provisioning request without its request id. The API, the console and (through the API) the CLI
all render with it; it reads nothing, calls nothing and creates nothing.

A ``password`` variable has no default and may stand only for the whole of
``agent.harnessAuth.secret``: the template never holds a credential. Rendering replaces it with
the reference of a Secret the caller names; left unfilled, the rendered harnessAuth names its
method only and the caller must choose a Secret.

A pure leaf like the rest of ``occ.documents``: problems are ``TemplateProblem`` (a location in
the template or the input, and a message naming that place, never the value), which the
commands map to the API's 400.

One module, though long: the template's shape, its write-time checks and its renderer share
one token grammar and its helpers; split, each part would reach into the others' privates.
"""

from __future__ import annotations

import copy
import json
import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import ConfigDict, Field, StrictBool, StrictFloat, StrictInt, StrictStr

from occ.documents.base import Document, SecretRef

VARIABLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# ``{{ vars.x }}``, optionally escaped with one backslash; what lies between the braces is
# judged by ``_variable_of`` (a malformed ``vars.`` expression is refused, anything else is text).
TOKEN = re.compile(r"(\\?)\{\{\s*(vars\.[^{}]*?)\s*\}\}")
_EXACT = re.compile(r"^\{\{\s*vars\.([A-Za-z_][A-Za-z0-9_]*)\s*\}\}$")
VARIABLE_TYPES = ("string", "number", "boolean", "password")
PASSWORD_METHODS = ("api_key", "codex_pat")
WORKSPACE_FILES = ("AGENTS.md", "SOUL.md", "IDENTITY.md", "USER.md")
MAX_BYTES = 1024 * 1024
MAX_DEPTH = 64
MAX_VARIABLES = 64
WORKSPACE_FILE_MAX_BYTES = 16 * 1024

Loc = tuple[str | int, ...]
Scalar = StrictBool | StrictInt | StrictFloat | StrictStr


@dataclass(frozen=True)
class TemplateProblem:
    """One refused part: where (a location from the template's or the input's root), which
    detail code, and a message that names the place and what it accepts."""

    loc: Loc
    code: str
    message: str


class TemplateRefused(ValueError):
    def __init__(self, problems: list[TemplateProblem]) -> None:
        super().__init__(problems[0].message if problems else "The template is not valid.")
        self.problems = problems


class _Part(Document):
    # A template is written by a person: an unknown key is a mistake worth naming, not dropped.
    model_config = ConfigDict(frozen=True, alias_generator=Document.model_config["alias_generator"],
                              populate_by_name=True, extra="forbid", strict=True)


class PresetVariable(_Part):
    type: Literal["string", "number", "boolean", "password"]
    description: StrictStr | None = Field(default=None, max_length=200)
    default: Scalar | None = None


class TemplateSecretRef(_Part):
    """A Secret reference; ``namespaceId`` may be left out (the Preset's Namespace)."""

    kind: Literal["secret"]
    namespace_id: StrictStr | None = None
    id: StrictStr


class TemplateHarnessAuth(_Part):
    """A method with a Secret reference, a password variable (``secret``), or the method alone."""

    method: StrictStr
    source: TemplateSecretRef | None = None
    secret: StrictStr | None = None


class TemplateDelivery(_Part):
    type: Literal["env"]


class TemplateBinding(_Part):
    source: TemplateSecretRef
    delivery: TemplateDelivery | None = None


class TemplateAgent(_Part):
    name: StrictStr | None = None
    execution_mode: StrictStr | None = None
    backend_id: StrictStr | None = None
    harness_auth: TemplateHarnessAuth | None = None
    initial_workspace_files: dict[Literal["AGENTS.md", "SOUL.md", "IDENTITY.md", "USER.md"], StrictStr] | None = None
    plugins: dict[str, Any] | None = None
    plugin_approvers: list[Any] | None = None


class TemplateConfiguration(_Part):
    values: dict[str, Any] | None = None
    secret_bindings: dict[str, TemplateBinding] | None = None


class PresetTemplate(_Part):
    """Every field optional: ``{}`` is a valid template (the console's starter form)."""

    variables: dict[str, PresetVariable] = Field(default_factory=dict)
    agent: TemplateAgent | None = None
    configuration: TemplateConfiguration | None = None

    # --- write-time checks --------------------------------------------------------------------

    def problems(self, namespace_id: str) -> list[TemplateProblem]:
        """What a write refuses: variable declarations and defaults, references to undeclared
        or mistyped variables, password variables outside ``agent.harnessAuth.secret``, and
        Secret references to another Namespace. Unfilled variables are fine."""
        found = list(self._variable_problems())
        found.extend(self._reference_problems())
        found.extend(self._credential_problems(namespace_id))
        files = self.agent.initial_workspace_files if self.agent else None
        found.extend(_workspace_file_problems(files or {}))
        return found

    def _variable_problems(self) -> Iterator[TemplateProblem]:
        if len(self.variables) > MAX_VARIABLES:
            yield TemplateProblem(("variables",), "TOO_LONG",
                                  f"Preset variables: at most {MAX_VARIABLES} variables.")
        for name, variable in self.variables.items():
            at = ("variables", name)
            if not VARIABLE_NAME.fullmatch(name):
                yield TemplateProblem(at, "INVALID_FORMAT", "Preset variables: a variable name is letters, digits "
                                      "and _, not starting with a digit.")
                continue
            if variable.default is None:
                continue
            if variable.type == "password":
                yield TemplateProblem((*at, "default"), "INVALID_VALUE", f"Preset variables.{name}: a password "
                                      "variable has no default; the person applying the Preset chooses a Secret.")
            elif not _fits(variable.type, variable.default):
                yield TemplateProblem((*at, "default"), "INVALID_TYPE",
                                      f"Preset variables.{name}: the default must be a {variable.type}.")

    def _launch_strings(self) -> Iterator[tuple[Loc, str]]:
        """Every string of the launch settings (keys of ``configuration.values`` included, at
        their object with a ``[key]`` marker), with where it is."""
        launch = self.model_dump(by_alias=True, exclude_unset=True, exclude={"variables"}, mode="json")
        yield from _strings(launch, ())

    def _reference_problems(self) -> Iterator[TemplateProblem]:
        secret_at = ("agent", "harnessAuth", "secret")
        for loc, text in self._launch_strings():
            dotted = _dotted(loc)
            for escaped, expression in _tokens(text):
                if escaped:
                    continue
                name = _variable_of(expression)
                if name is None:
                    yield TemplateProblem(loc, "INVALID_FORMAT", f"Preset {dotted}: a variable is written "
                                          "{{ vars.name }}, a name of letters, digits and _.")
                    continue
                variable = self.variables.get(name)
                if variable is None:
                    yield TemplateProblem(loc, "INVALID_VALUE", f"Preset {dotted}: uses vars.{name}, which is not "
                                          "declared under variables.")
                elif variable.type == "password" and loc != secret_at:
                    yield TemplateProblem(loc, "INVALID_VALUE", f"Preset {dotted}: a password variable may stand "
                                          "only for agent.harnessAuth.secret.")
                elif variable.type != "string" and not _EXACT.fullmatch(text):
                    yield TemplateProblem(loc, "INVALID_VALUE", f"Preset {dotted}: vars.{name} is a "
                                          f"{variable.type}; only a string variable may sit inside other text.")
                elif variable.type != "string" and "[key]" in loc:
                    yield TemplateProblem(loc, "INVALID_VALUE", f"Preset {dotted}: a key may hold string "
                                          "variables only.")

    def _credential_problems(self, namespace_id: str) -> Iterator[TemplateProblem]:
        auth = self.agent.harness_auth if self.agent else None
        at: Loc = ("agent", "harnessAuth")
        if auth is not None:
            if auth.secret is not None:
                name = _exact_variable(auth.secret)
                variable = self.variables.get(name) if name else None
                if variable is None or variable.type != "password":
                    yield TemplateProblem((*at, "secret"), "INVALID_VALUE", "Preset agent.harnessAuth.secret: only a "
                                          "password variable ({{ vars.name }}) is accepted, never a credential.")
                elif auth.method not in PASSWORD_METHODS:
                    yield TemplateProblem((*at, "method"), "INVALID_VALUE", "Preset agent.harnessAuth.method: a "
                                          "password variable needs the method api_key or codex_pat.")
                if auth.source is not None:
                    yield TemplateProblem((*at, "source"), "INVALID_VALUE", "Preset agent.harnessAuth: name either a "
                                          "source Secret or a password variable (secret), not both.")
            if auth.source is not None:
                yield from _foreign((*at, "source"), auth.source, namespace_id)
        bindings = (self.configuration.secret_bindings if self.configuration else None) or {}
        for env, binding in bindings.items():
            yield from _foreign(("configuration", "secretBindings", env, "source"), binding.source, namespace_id)

    def size_problems(self) -> list[TemplateProblem]:
        stored = self.model_dump(by_alias=True, mode="json", exclude_unset=True)
        if _depth(stored) > MAX_DEPTH:
            return [TemplateProblem((), "TOO_DEEP", f"Preset template: at most {MAX_DEPTH} levels deep.")]
        if len(json.dumps(stored).encode("utf-8")) > MAX_BYTES:
            return [TemplateProblem((), "TOO_LONG", "Preset template: at most 1 MiB of JSON.")]
        return []

    # --- identity ------------------------------------------------------------------------------

    def document(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, mode="json", exclude_unset=True)

    def stored(self, namespace_id: str) -> dict[str, Any]:
        """The JSON a Preset row holds: Secret references that left out their Namespace name
        the Preset's own (a Preset write fills them; they are never another's)."""
        def own(ref: TemplateSecretRef) -> TemplateSecretRef:
            return ref if ref.namespace_id is not None else ref.model_copy(update={"namespace_id": namespace_id})

        filled: dict[str, Any] = {}
        agent, configuration = self.agent, self.configuration
        if agent is not None and agent.harness_auth is not None and agent.harness_auth.source is not None:
            auth = agent.harness_auth.model_copy(update={"source": own(agent.harness_auth.source)})
            filled["agent"] = agent.model_copy(update={"harness_auth": auth})
        if configuration is not None and configuration.secret_bindings:
            bindings = {env: binding.model_copy(update={"source": own(binding.source)})
                        for env, binding in configuration.secret_bindings.items()}
            filled["configuration"] = configuration.model_copy(update={"secret_bindings": bindings})
        return self.model_copy(update=filled).document()

    @classmethod
    def of_draft(cls, *, namespace_id: str, execution_mode: str, plugins: dict[str, Any],
                 plugin_approvers: list[Any], harness: tuple[str, str] | None, values: dict[str, Any],
                 bound: dict[str, str]) -> PresetTemplate:
        """A template of an Agent's draft ("Save as preset"): no variables; its model
        credential (``harness``: method and Secret id) and bindings (ENV -> Secret id) kept."""
        def ref(secret_id: str) -> TemplateSecretRef:
            return TemplateSecretRef(kind="secret", namespace_id=namespace_id, id=secret_id)

        agent = TemplateAgent(execution_mode=execution_mode, plugins=plugins)
        if harness is not None:
            agent = agent.model_copy(update={"harness_auth": TemplateHarnessAuth(method=harness[0],
                                                                                 source=ref(harness[1]))})
        if plugin_approvers:
            agent = agent.model_copy(update={"plugin_approvers": plugin_approvers})
        bindings = {env: TemplateBinding(source=ref(secret_id), delivery=TemplateDelivery(type="env"))
                    for env, secret_id in sorted(bound.items())}
        return cls(agent=agent, configuration=TemplateConfiguration(values=values, secret_bindings=bindings))

    def password_variables(self) -> list[str]:
        return [name for name, variable in self.variables.items() if variable.type == "password"]

    def bound_credential(self) -> TemplateSecretRef | None:
        """The Secret the template itself binds for the model credential (the console locks it)."""
        auth = self.agent.harness_auth if self.agent else None
        return auth.source if auth is not None else None

    # --- rendering ---------------------------------------------------------------------------

    def render(self, *, namespace_id: str, inputs: Mapping[str, Any],
               credentials: Mapping[str, SecretRef] | None = None) -> LaunchRequest:
        """The launch request for ``inputs`` (variable name -> value) and ``credentials``
        (password variable -> the Secret that fills it). Raises ``TemplateRefused``."""
        values = self._resolve(inputs, credentials or {})
        launch = self.model_dump(by_alias=True, exclude_unset=True, exclude={"variables"}, mode="json")
        problems: list[TemplateProblem] = []
        rendered = _render(launch, (), values, problems)
        # Checked before and after expansion: a variable's value may make a file too long.
        problems.extend(_workspace_file_problems((rendered.get("agent") or {}).get("initialWorkspaceFiles") or {}))
        if problems:
            raise TemplateRefused(problems)
        return _launch_request(rendered, namespace_id, credentials or {})

    def _resolve(self, inputs: Mapping[str, Any], credentials: Mapping[str, SecretRef]) -> dict[str, Any]:
        problems: list[TemplateProblem] = []
        for name in inputs:
            variable = self.variables.get(name)
            if variable is None:
                problems.append(TemplateProblem(("variables", name), "UNKNOWN_FIELD",
                                                f"variables.{name}: the Preset declares no such variable."))
            elif variable.type == "password":
                problems.append(TemplateProblem(("variables", name), "INVALID_VALUE", f"variables.{name}: "
                                                "a password variable is filled with a Secret (credentials)."))
            elif not _fits(variable.type, inputs[name]):
                problems.append(TemplateProblem(("variables", name), "INVALID_TYPE",
                                                f"variables.{name}: must be a {variable.type}."))
        for name in credentials:
            variable = self.variables.get(name)
            if variable is None or variable.type != "password":
                problems.append(TemplateProblem(("credentials", name), "UNKNOWN_FIELD",
                                                f"credentials.{name}: the Preset declares no such password variable."))
        used = self._used_variables()
        resolved: dict[str, Any] = {}
        for name, variable in self.variables.items():
            if variable.type == "password":
                continue
            if name in inputs:
                resolved[name] = inputs[name]
            elif variable.default is not None:
                resolved[name] = variable.default
            elif name in used:
                problems.append(TemplateProblem(("variables", name), "REQUIRED",
                                                f"variables.{name}: the Preset needs a value (it has no default)."))
        if problems:
            raise TemplateRefused(problems)
        return resolved

    def _used_variables(self) -> set[str]:
        used = set()
        for _loc, text in self._launch_strings():
            for escaped, expression in _tokens(text):
                name = _variable_of(expression)
                if not escaped and name is not None:
                    used.add(name)
        return used


class LaunchAuth(Document):
    """The rendered model credential: a method and its Secret, or the method alone (a Secret
    must still be chosen)."""

    method: str
    source: SecretRef | None = None


class LaunchConfiguration(Document):
    kind: Literal["agent"] = "agent"
    values: dict[str, Any] = Field(default_factory=dict)
    secret_bindings: dict[str, Any] = Field(default_factory=dict)


class LaunchRequest(Document):
    """A rendered Preset: the body of an Agent provisioning request without ``requestId``.
    Fields the template left out stay out (the form's or the API's defaults apply)."""

    name: str | None = None
    execution_mode: Any = None
    backend_id: Any = None
    harness_auth: LaunchAuth | None = None
    initial_workspace_files: dict[str, Any] | None = None
    plugins: Any = None
    plugin_approvers: Any = None
    configuration: LaunchConfiguration

    @property
    def needs_credential(self) -> bool:
        return self.harness_auth is not None and self.harness_auth.source is None

    def request(self) -> dict[str, Any]:
        """The provisioning body (camelCase) without ``requestId``; a method-only harnessAuth
        is left out (the caller adds the Secret it chose)."""
        body = self.document()
        if self.needs_credential:
            body.pop("harnessAuth", None)
        body["configuration"] = self.configuration.model_dump(by_alias=True, mode="json")
        return body


# --- helpers ------------------------------------------------------------------------------------


def _depth(value: Any) -> int:
    """How many levels of objects and arrays ``value`` holds (a walk with its own stack)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, level)
            stack.extend((child, level + 1) for child in (item.values() if isinstance(item, dict) else item))
    return deepest


def _workspace_file_problems(files: Mapping[Any, Any]) -> Iterator[TemplateProblem]:
    for name, text in files.items():
        at = ("agent", "initialWorkspaceFiles", name)
        if not isinstance(text, str):
            continue  # a whole-value variable of another type: the provisioning API refuses it
        try:
            size = len(text.encode("utf-8"))
        except UnicodeEncodeError:
            yield TemplateProblem(at, "INVALID_VALUE", f"Preset agent.initialWorkspaceFiles.{name}: must be valid "
                                  "Unicode text.")
            continue
        if "\x00" in text:
            yield TemplateProblem(at, "INVALID_VALUE", f"Preset agent.initialWorkspaceFiles.{name}: must not "
                                  "contain NUL.")
        elif size > WORKSPACE_FILE_MAX_BYTES:
            yield TemplateProblem(at, "TOO_LONG", f"Preset agent.initialWorkspaceFiles.{name}: at most 16 KiB "
                                  "of UTF-8.")


def _fits(kind: str, value: Any) -> bool:
    if kind == "string":
        return isinstance(value, str)
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    if kind == "boolean":
        return isinstance(value, bool)
    return False


def _tokens(text: str) -> Iterator[tuple[bool, str]]:
    for match in TOKEN.finditer(text):
        yield bool(match.group(1)), match.group(2)


def _variable_of(expression: str) -> str | None:
    name = expression[len("vars."):]
    return name if VARIABLE_NAME.fullmatch(name) else None


def _exact_variable(text: str) -> str | None:
    match = _EXACT.fullmatch(text)
    return match.group(1) if match else None


def _dotted(loc: Loc) -> str:
    return ".".join(str(part) for part in loc if part != "[key]") or "template"


def _strings(value: Any, loc: Loc) -> Iterator[tuple[Loc, str]]:
    stack: list[tuple[Loc, Any]] = [(loc, value)]
    while stack:
        here, item = stack.pop()
        if isinstance(item, str):
            yield here, item
        elif isinstance(item, dict):
            for key, child in item.items():
                if here[:2] == ("configuration", "values"):
                    yield (*here, key, "[key]"), key
                stack.append(((*here, key), child))
        elif isinstance(item, list):
            stack.extend(((*here, index), child) for index, child in enumerate(item))


def _substitute(text: str, loc: Loc, values: Mapping[str, Any], problems: list[TemplateProblem]) -> Any:
    exact = _exact_variable(text)
    if exact is not None and exact in values:
        return copy.deepcopy(values[exact])

    def replace(match: re.Match[str]) -> str:
        if match.group(1):  # escaped: the token itself, as text
            return match.group(0)[1:]
        name = _variable_of(match.group(2))
        if name is None or name not in values:
            problems.append(TemplateProblem(loc, "INVALID_VALUE", f"Preset {_dotted(loc)}: a variable here has no "
                                            "value."))
            return ""
        value = values[name]
        if not isinstance(value, str):
            problems.append(TemplateProblem(loc, "INVALID_VALUE", f"Preset {_dotted(loc)}: vars.{name} is not a "
                                            "string; it can only be the whole value."))
            return ""
        return value

    return TOKEN.sub(replace, text)


def _render(value: Any, loc: Loc, values: Mapping[str, Any], problems: list[TemplateProblem]) -> Any:
    if isinstance(value, str):
        if loc == ("agent", "harnessAuth", "secret"):
            return value  # a password token, filled by _launch_request
        return _substitute(value, loc, values, problems)
    if isinstance(value, list):
        return [_render(child, (*loc, index), values, problems) for index, child in enumerate(value)]
    if isinstance(value, dict):
        rendered: dict[str, Any] = {}
        in_values = loc[:2] == ("configuration", "values")
        for key, child in value.items():
            new_key = _substitute(key, (*loc, key), values, problems) if in_values else key
            if not isinstance(new_key, str):
                problems.append(TemplateProblem((*loc, key), "INVALID_VALUE",
                                                f"Preset {_dotted((*loc, key))}: a key must render to text."))
                continue
            if new_key in rendered:
                problems.append(TemplateProblem((*loc, key), "INVALID_VALUE", f"Preset {_dotted(loc)}: two keys "
                                                "render to the same name."))
                continue
            rendered[new_key] = _render(child, (*loc, key), values, problems)
        return rendered
    return copy.deepcopy(value)


def _foreign(loc: Loc, ref: TemplateSecretRef, namespace_id: str) -> Iterator[TemplateProblem]:
    if ref.namespace_id is not None and ref.namespace_id != namespace_id:
        yield TemplateProblem((*loc, "namespaceId"), "INVALID_VALUE",
                              f"Preset {_dotted(loc)}: a Preset may name only Secrets of its own Namespace.")


def _filled(ref: Mapping[str, Any], namespace_id: str) -> SecretRef:
    return SecretRef.to(namespace_id, ref["id"])


def _launch_request(rendered: dict[str, Any], namespace_id: str,
                    credentials: Mapping[str, SecretRef]) -> LaunchRequest:
    agent = dict(rendered.get("agent") or {})
    configuration = dict(rendered.get("configuration") or {})
    auth = agent.pop("harnessAuth", None)
    launch: dict[str, Any] = {key: agent[key] for key in agent}
    if auth is not None:
        source = auth.get("source")
        secret = auth.get("secret")
        if source is not None:
            launch["harnessAuth"] = LaunchAuth(method=auth["method"], source=_filled(source, namespace_id))
        elif secret is not None:
            name = _exact_variable(secret) or ""
            launch["harnessAuth"] = LaunchAuth(method=auth["method"], source=credentials.get(name))
        else:
            launch["harnessAuth"] = LaunchAuth(method=auth["method"])
    bindings = {env: {"source": _filled(binding["source"], namespace_id).document(),
                      "delivery": binding.get("delivery") or {"type": "env"}}
                for env, binding in (configuration.get("secretBindings") or {}).items()}
    launch["configuration"] = LaunchConfiguration(values=configuration.get("values") or {},
                                                  secret_bindings=bindings)
    return LaunchRequest.model_validate(launch)
