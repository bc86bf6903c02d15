"""Configuration reads: one by id, the Namespace's list (with the Agents that use each), one
Configuration's details for the console (its Agents and its bound Secrets by name), and who
may check a document being written."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import Q, QuerySet

from occ.errors import NotFound
from occ.iam.actor import Actor
from occ.iam.permissions import Action, Kind
from occ.iam.policy import allowed_in, authorize
from occ.models import Agent, Configuration
from occ.openclaw.document import primary_model_ref
from occ.selectors.namespaces import get_live_namespace
from occ.selectors.paging import moment_page
from occ.selectors.secrets import user_secrets


def configuration_get(*, actor: Actor, namespace_id: str, configuration_id: str) -> Configuration:
    """The Configuration under its exact Namespace (404 otherwise), if the actor may read it."""
    namespace = get_live_namespace(namespace_id)
    configuration = Configuration.objects.filter(namespace=namespace, id=configuration_id).first()
    if configuration is None:
        raise NotFound("The configuration does not exist.")
    authorize(actor, Action.READ, Kind.CONFIGURATION, namespace_id=namespace.id, resource_id=configuration.id)
    return configuration


def configuration_secret_ids(configuration: Configuration) -> dict[str, str]:
    """The Configuration's bindings: ``{ENV_NAME: Secret id}``, by name."""
    return {binding.env_name: binding.secret_id
            for binding in sorted(configuration.secret_bindings.all(), key=lambda b: b.env_name)}


def delivered_secret_ids(agent: Agent, bindings: Mapping[str, str]) -> set[str]:
    """The Secrets a deploy of ``agent`` with these bindings (``{ENV_NAME: Secret id}``) delivers:
    each bound one, and the Agent's model key. The deploy locks and checks exactly these, and the
    console asks about exactly these before offering Deploy."""
    return set(bindings.values()) | ({agent.harness_secret_id} if agent.harness_secret_id else set())


@dataclass(frozen=True)
class AgentName:
    id: str
    name: str


@dataclass(frozen=True)
class ConfigurationSummary:
    """A row of the list: the Configuration, its primary model and the Agents that use it
    (``agents``: those the actor may read, by name; ``hidden_agents``: how many others)."""

    id: str
    name: str
    generation: int
    model: str | None
    created_at: datetime
    updated_at: datetime
    agents: list[AgentName] = field(default_factory=list)
    hidden_agents: int = 0

    @property
    def agent_count(self) -> int:
        return len(self.agents) + self.hidden_agents

    def matches(self, query: str) -> bool:
        """``query`` (case ignored) is part of the name, the id, the model or a readable Agent's name."""
        needle = query.casefold()
        return not needle or any(needle in text.casefold() for text in
                                 (self.name, self.id, self.model or "", *(agent.name for agent in self.agents)))


def _agents_by_configuration(actor: Actor, namespace_id: str,
                             configuration_ids: list[str]) -> dict[str, tuple[list[AgentName], int]]:
    readable = allowed_in(actor, Action.READ, Kind.AGENT, namespace_id=namespace_id)
    found: dict[str, tuple[list[AgentName], int]] = {}
    rows = (Agent.objects.filter(namespace_id=namespace_id, configuration_id__in=configuration_ids)
            .order_by("name", "id").values_list("configuration_id", "id", "name"))
    for configuration_id, agent_id, name in rows:
        names, hidden = found.get(configuration_id, ([], 0))
        if readable(agent_id):
            names.append(AgentName(agent_id, name))
        else:
            hidden += 1
        found[configuration_id] = (names, hidden)
    return found


def _summaries(actor: Actor, namespace_id: str, configurations: list[Configuration]) -> list[ConfigurationSummary]:
    agents = _agents_by_configuration(actor, namespace_id, [c.id for c in configurations])
    summaries = []
    for configuration in configurations:
        names, hidden = agents.get(configuration.id, ([], 0))
        summaries.append(ConfigurationSummary(
            id=configuration.id, name=configuration.name, generation=configuration.generation,
            model=primary_model_ref(configuration.values),
            created_at=configuration.created_at, updated_at=configuration.updated_at, agents=names,
            hidden_agents=hidden))
    return summaries


def configuration_list(*, actor: Actor, namespace_id: str) -> list[ConfigurationSummary]:
    """The Namespace's Configurations the actor may read exactly, most recently changed first,
    with the Agents that use each; two queries however many."""
    namespace = get_live_namespace(namespace_id)
    authorize(actor, Action.READ, Kind.NAMESPACE, namespace_id=namespace.id)
    readable = allowed_in(actor, Action.READ, Kind.CONFIGURATION, namespace_id=namespace.id)
    configurations = [configuration for configuration in
                      Configuration.objects.filter(namespace=namespace).order_by("-updated_at", "id")
                      if readable(configuration.id)]
    return _summaries(actor, namespace.id, configurations)


PAGE_SIZE = 50


@dataclass(frozen=True)
class ConfigurationPage:
    rows: list[ConfigurationSummary]
    next_cursor: str | None  # the page after this one (older changes); None on the last page


def _matching(actor: Actor, namespace_id: str, configurations: QuerySet[Configuration],
              query: str) -> QuerySet[Configuration]:
    """The Configurations whose name, id or primary model contains ``query`` (ignoring case), or
    that an Agent the actor may read and whose name contains it uses: ``matches`` in SQL (the
    model's text is read from ``agents.defaults.model`` or its ``primary``)."""
    readable_agent = allowed_in(actor, Action.READ, Kind.AGENT, namespace_id=namespace_id)
    agents = Agent.objects.filter(namespace_id=namespace_id, name__icontains=query).values_list(
        "id", "configuration_id")
    used_by = {configuration_id for agent_id, configuration_id in agents if readable_agent(agent_id)}
    return configurations.filter(
        Q(name__icontains=query) | Q(id__icontains=query) | Q(id__in=used_by)
        | Q(values__agents__defaults__model__primary__icontains=query)
        | Q(values__agents__defaults__model__icontains=query))


def configuration_page(*, actor: Actor, namespace_id: str, after: str = "", query: str = "",
                       page_size: int = PAGE_SIZE) -> ConfigurationPage:
    """One page of :func:`configuration_list` (the API's; the console's with a ``query``, see
    ``_matching``), keyset on ``(updated_at, id)`` newest first, like the audit log's pages: a
    Configuration changed while someone pages moves to the top and is not seen twice further
    down. Rows the actor may not read are skipped in SQL-ordered batches, so a page is full unless
    it is the last."""
    namespace = get_live_namespace(namespace_id)
    authorize(actor, Action.READ, Kind.NAMESPACE, namespace_id=namespace.id)
    configurations = Configuration.objects.filter(namespace=namespace)
    if query:
        configurations = _matching(actor, namespace.id, configurations, query)
    chosen, next_cursor = moment_page(
        configurations, field="updated_at", after=after, newest_first=True,
        readable=allowed_in(actor, Action.READ, Kind.CONFIGURATION, namespace_id=namespace.id), page_size=page_size)
    return ConfigurationPage(rows=_summaries(actor, namespace.id, chosen), next_cursor=next_cursor)


@dataclass(frozen=True)
class BoundSecret:
    """One binding: the variable, the Secret's id and its name (None when the actor may not read it)."""

    env_name: str
    secret_id: str
    secret_name: str | None


@dataclass(frozen=True)
class ConfigurationDetail:
    configuration: Configuration
    summary: ConfigurationSummary
    bindings: list[BoundSecret]


def configuration_detail(*, actor: Actor, namespace_id: str, configuration_id: str) -> ConfigurationDetail:
    """One Configuration with the Agents that use it and its Secrets by name."""
    configuration = configuration_get(actor=actor, namespace_id=namespace_id, configuration_id=configuration_id)
    names, hidden = _agents_by_configuration(actor, configuration.namespace_id, [configuration.id]).get(
        configuration.id, ([], 0))
    bound = configuration_secret_ids(configuration)
    readable = allowed_in(actor, Action.READ, Kind.SECRET, namespace_id=configuration.namespace_id)
    secret_names = dict(user_secrets().filter(namespace_id=configuration.namespace_id, id__in=bound.values())
                        .values_list("id", "name"))
    bindings = [BoundSecret(env, secret_id, secret_names.get(secret_id) if readable(secret_id) else None)
                for env, secret_id in bound.items()]
    summary = ConfigurationSummary(
        id=configuration.id, name=configuration.name, generation=configuration.generation,
        model=primary_model_ref(configuration.values),
        created_at=configuration.created_at, updated_at=configuration.updated_at, agents=names, hidden_agents=hidden)
    return ConfigurationDetail(configuration, summary, bindings)


def configuration_check_authorize(*, actor: Actor, namespace_id: str, configuration_id: str | None = None) -> None:
    """Checking a document is part of writing it: whoever may create a Configuration in the
    Namespace (or update this one) may have a draft checked; nobody else learns anything."""
    namespace = get_live_namespace(namespace_id)
    if configuration_id is None:
        authorize(actor, Action.CREATE, Kind.CONFIGURATION, namespace_id=namespace.id)
        return
    if not Configuration.objects.filter(namespace=namespace, id=configuration_id).exists():
        raise NotFound("The configuration does not exist.")
    authorize(actor, Action.UPDATE, Kind.CONFIGURATION, namespace_id=namespace.id, resource_id=configuration_id)


def configuration_name(*, namespace_id: str, configuration_id: str) -> str | None:
    """The name of a Configuration of the Namespace (None once deleted): for showing beside the
    id the caller already sees (an Agent's, a revision's)."""
    return (Configuration.objects.filter(namespace_id=namespace_id, id=configuration_id)
            .values_list("name", flat=True).first())


def configuration_names(*, namespace_id: str, configuration_ids: Iterable[str]) -> dict[str, str]:
    """``configuration_name`` of each id, in one query (a deleted one is absent): a list's."""
    wanted = set(configuration_ids)
    if not wanted:
        return {}
    return dict(Configuration.objects.filter(namespace_id=namespace_id, id__in=wanted).values_list("id", "name"))
