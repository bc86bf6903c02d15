"""The Configurations of a Namespace: list (search, paging), details, create, edit, the Secret
bindings, delete, and the check the JSON editor runs as you type.

The check (``configuration-check``) runs the server's own validation (the same
``configuration_values_problems`` the services refuse with, OCC's rules then the pinned
runtime's schema) on the text as typed and answers every problem with its line and column, so
the editor never carries a copy of the schema. Without JavaScript a refused save shows the same
placed problems under the field.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpResponse, JsonResponse
from django.urls import path, reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from console.common import (
    ConsoleRequest,
    SummaryItem,
    console_view,
    current,
    error_summary,
    known_failure_message,
    redirect_or_hx,
    render_page,
)
from console.forms.configurations import (
    BaseSecretBindingFormSet,
    ConfigurationDocumentForm,
    ConfigurationForm,
    OpenedAtForm,
    SecretBindingFormSet,
    document_text,
)
from console.pages.lists import KeysetPage, keyset_page
from console.pages.refusals import configuration_refusal
from occ.commands.base import build
from occ.commands.common import SecretRef
from occ.commands.configurations import (
    MAX_SECRET_BINDINGS,
    ConfigurationCreate,
    ConfigurationUpdate,
    SecretBinding,
)
from occ.errors import Conflict, InvalidRequest, NotFound, OccError
from occ.iam.permissions import Action, Kind
from occ.iam.policy import allowed
from occ.models import Configuration
from occ.openclaw.document import agent_template
from occ.openclaw.positions import PlacedProblem, document_problems
from occ.selectors.configurations import (
    ConfigurationDetail,
    ConfigurationSummary,
    configuration_check_authorize,
    configuration_detail,
    configuration_page,
)
from occ.selectors.permissions import configuration_actions_on
from occ.selectors.secrets import secret_list
from occ.services.configurations import NAME_TAKEN, configuration_create, configuration_delete, configuration_update

LIST = "console/configurations/list.html"
DETAIL = "console/configurations/detail.html"
FORM = "console/configurations/form.html"
DELETE = "console/configurations/delete.html"
BINDINGS = "console/configurations/bindings.html"
BINDINGS_PREFIX = "bindings"
PAGE_SIZE = 20
QUERY_MAX_CHARS = 200
MAX_CHECKED_CHARS = 500_000  # the form field's own limit
STALE = "Someone saved this Configuration after you opened it. Reload to see their changes, then reapply yours."
_FIELD_IDS = {"name": "configuration-name", "configuration_json": "configuration-json"}


# --- list ---------------------------------------------------------------------------------------

def _page_of(request: ConsoleRequest, query: str) -> tuple[KeysetPage[ConfigurationSummary], bool]:
    """The page of matching Configurations the link names (``?after=``, most recently changed
    first), and whether the viewer may read any Configuration here, the search aside."""
    console = current(request)

    def read(after: str, search: str = query, size: int = PAGE_SIZE) -> tuple[list[ConfigurationSummary], str | None]:
        page = configuration_page(actor=console.actor, namespace_id=console.namespace_id, after=after, query=search,
                                  page_size=size)
        return page.rows, page.next_cursor

    page = keyset_page(request, read, base=reverse("console:configurations", args=[console.namespace_id]),
                       keep={"q": query} if query else None)
    return page, bool(page.rows) or (bool(query) and bool(read("", "", 1)[0]))


@require_GET
@console_view
def configurations(request: ConsoleRequest, namespace_id: str) -> HttpResponse:
    """The list; with ``HX-Request`` (search, paging) only ``#configurations-table``."""
    console = current(request)
    query = (request.GET.get("q") or "").strip()[:QUERY_MAX_CHARS]
    page, any_configurations = _page_of(request, query)
    context = {"console": console, "nav": "configurations", "namespace_id": namespace_id, "q": query,
               "page": page, "any_configurations": any_configurations,
               "can_create": allowed(console.actor, Action.CREATE, Kind.CONFIGURATION, namespace_id=namespace_id)}
    return render_page(request, LIST, context, partial="configurations-table")


# --- details ------------------------------------------------------------------------------------

def _detail_context(request: ConsoleRequest, detail: ConfigurationDetail, **extra: Any) -> dict[str, Any]:
    console = current(request)
    configuration = detail.configuration
    may = configuration_actions_on(console.actor, configuration)
    return {"console": console, "nav": "configurations", "namespace_id": configuration.namespace_id,
            "detail": detail, "configuration": configuration, "document": document_text(configuration.values),
            "can_update": may["update"], "can_delete": may["delete"], "modal": bool(request.htmx),
            # A control the caller may not use is disabled with this reason (the server refuses too).
            "why_not": configuration_refusal(may), **extra}


def _detail(request: ConsoleRequest, configuration_id: str) -> ConfigurationDetail:
    console = current(request)
    return configuration_detail(actor=console.actor, namespace_id=console.namespace_id,
                                configuration_id=configuration_id)


def _read_only(request: ConsoleRequest, configuration: Configuration) -> HttpResponse:
    """An editor the caller could not save from is not offered: the Configuration's page says why."""
    return redirect_or_hx(request, reverse("console:configuration",
                                           args=[configuration.namespace_id, configuration.id]))


@require_GET
@console_view
def configuration(request: ConsoleRequest, namespace_id: str, configuration_id: str) -> HttpResponse:
    detail = _detail(request, configuration_id)
    return render_page(request, DETAIL, _detail_context(request, detail), partial="configuration-detail")


# --- create and edit ----------------------------------------------------------------------------

def _placed_errors(form: ConfigurationDocumentForm, exc: InvalidRequest) -> None:
    """A refused document: each problem where it is in the text (the same placement the editor
    shows); a refusal about anything else, under the field as the service said it."""
    if any(d.path == "/name" for d in exc.details):
        form.add_error("name", known_failure_message(exc))
        return
    placed = document_problems(form.text()) if any(d.path.startswith("/values") for d in exc.details) else []
    if placed:
        for problem in placed:
            form.add_error("configuration_json", f"{problem.where}: {problem.message}")
        return
    form.add_error("configuration_json", known_failure_message(exc))


def _form_context(request: ConsoleRequest, form: ConfigurationDocumentForm, *,
                  detail: ConfigurationDetail | None = None, stale: bool = False) -> dict[str, Any]:
    console = current(request)
    namespace_id = console.namespace_id
    if detail is None:
        action = reverse("console:configuration-new", args=[namespace_id])
        check = reverse("console:configuration-check-new", args=[namespace_id])
        cancel = reverse("console:configurations", args=[namespace_id])
    else:
        ids = [namespace_id, detail.configuration.id]
        action = reverse("console:configuration-edit", args=ids)
        check = reverse("console:configuration-check", args=ids)
        cancel = reverse("console:configuration", args=ids)
    return {"console": console, "nav": "configurations", "namespace_id": namespace_id, "form": form,
            "detail": detail, "action_url": action, "check_url": check, "cancel_url": cancel, "stale": stale,
            "error_summary": error_summary(form.errors, _FIELD_IDS, fallback_id="configuration-json")}


def _refused_form(request: ConsoleRequest, form: ConfigurationDocumentForm, exc: OccError, *,
                  detail: ConfigurationDetail | None = None, stale: bool = False) -> HttpResponse:
    if isinstance(exc, InvalidRequest):
        _placed_errors(form, exc)
        status = 200  # an invalid form re-renders with its field errors
    elif exc.message == NAME_TAKEN:
        form.add_error("name", NAME_TAKEN)
        status = 200
    else:
        form.add_error("configuration_json", STALE if stale else exc.message)
        status = exc.status
    return render_page(request, FORM, _form_context(request, form, detail=detail, stale=stale),
                       partial="configuration-form", status=status)


@require_http_methods(["GET", "POST"])
@console_view
def configuration_new(request: ConsoleRequest, namespace_id: str) -> HttpResponse:
    """GET: the Create Configuration form, a minimal document to start from. POST: create it."""
    console = current(request)
    if request.method == "GET":
        starter = document_text(agent_template(provider="openai", model=""))
        form = ConfigurationDocumentForm(initial={"configuration_json": starter})
        return render_page(request, FORM, _form_context(request, form), partial="configuration-form")
    form = ConfigurationDocumentForm(request.POST)
    if not form.is_valid():
        return render_page(request, FORM, _form_context(request, form), partial="configuration-form")
    try:
        created = configuration_create(actor=console.actor, namespace_id=namespace_id, command=build(
            ConfigurationCreate, kind="agent", name=form.chosen_name(), values=form.cleaned_data["configuration_json"]))
    except (InvalidRequest, Conflict) as exc:
        return _refused_form(request, form, exc)
    messages.success(request, f"Configuration {created.name} created.")
    return redirect_or_hx(request, reverse("console:configuration", args=[namespace_id, created.id]))


@require_http_methods(["GET", "POST"])
@console_view
def configuration_edit(request: ConsoleRequest, namespace_id: str, configuration_id: str) -> HttpResponse:
    """GET: the document in the editor, at its generation. POST: replace it (bindings kept),
    refused when someone saved in between (the generation it was opened at)."""
    console = current(request)
    detail = _detail(request, configuration_id)
    saved = detail.configuration
    if request.method == "GET":
        if not configuration_actions_on(console.actor, saved)["update"]:
            return _read_only(request, saved)
        form = ConfigurationForm.of(saved.name, saved.values, saved.generation)
        return render_page(request, FORM, _form_context(request, form, detail=detail), partial="configuration-form")
    form = ConfigurationForm(request.POST)
    if not form.is_valid():
        return render_page(request, FORM, _form_context(request, form, detail=detail), partial="configuration-form")
    expected = form.cleaned_data["generation"]
    try:
        updated = configuration_update(
            actor=console.actor, namespace_id=namespace_id, configuration_id=saved.id,
            command=build(ConfigurationUpdate, name=form.chosen_name(), values=form.cleaned_data["configuration_json"]),
            expected_generation=expected)
    except (InvalidRequest, Conflict) as exc:
        stale = isinstance(exc, Conflict) and _detail(request, configuration_id).configuration.generation != expected
        return _refused_form(request, form, exc, detail=detail, stale=stale)
    messages.success(request, f"Configuration saved (generation {updated.generation}). "
                              "Agents use it from their next deploy.")
    return redirect_or_hx(request, reverse("console:configuration", args=[namespace_id, updated.id]))


# --- Secret bindings ----------------------------------------------------------------------------

def _secret_choices(request: ConsoleRequest, detail: ConfigurationDetail) -> list[tuple[str, str]]:
    """The Namespace's Secrets the person may read, by name; a bound one they may not read stays
    (unnamed), so saving the other rows keeps it if they may use it and is refused otherwise."""
    console = current(request)
    readable = sorted(secret_list(actor=console.actor, namespace_id=console.namespace_id),
                      key=lambda secret: (secret.name.casefold(), secret.id))
    choices = [(secret.id, secret.name) for secret in readable]
    named = {secret.id for secret in readable}
    choices += [(b.secret_id, f"A Secret you cannot read ({b.secret_id})") for b in detail.bindings
                if b.secret_id not in named]
    return choices


def _bindings_summary(formset: BaseSecretBindingFormSet, opened: OpenedAtForm, refusal: str) -> list[SummaryItem]:
    """What was refused, each linking to its row's field (the form's own problems to the first)."""
    first = (formset.forms[0]["env_name"].auto_id or "") if formset.forms else ""
    general = [refusal] if refusal else []
    general += [*formset.non_form_errors(), *opened.errors.get("generation", [])]
    return [SummaryItem(first, message) for message in general] + [
        SummaryItem(form[name].auto_id or "", message)
        for form in formset.forms for name, messages_ in form.errors.items() for message in messages_]


def _bindings_context(request: ConsoleRequest, detail: ConfigurationDetail, opened: OpenedAtForm,
                      formset: BaseSecretBindingFormSet, *, refusal: str = "",
                      adding: bool = False) -> dict[str, Any]:
    """``adding``: the rows as typed plus an empty one, with no error shown yet."""
    console = current(request)
    ids = [console.namespace_id, detail.configuration.id]
    return {"console": console, "nav": "configurations", "namespace_id": console.namespace_id, "detail": detail,
            "configuration": detail.configuration, "opened": opened, "formset": formset, "adding": adding,
            "error_summary": [] if adding else _bindings_summary(formset, opened, refusal),
            "can_add": len(formset.forms) < MAX_SECRET_BINDINGS,
            "has_secrets": bool(formset.form_kwargs["secret_choices"]),
            "action_url": reverse("console:configuration-bindings", args=ids),
            "cancel_url": reverse("console:configuration", args=ids)}


def _one_more_row(data: Any) -> Any:
    """The posted rows and one empty row more (up to the most a Configuration may have)."""
    data = data.copy()
    total = f"{BINDINGS_PREFIX}-TOTAL_FORMS"
    rows = int(data[total]) if data.get(total, "").isdigit() else 0
    data[total] = str(min(rows + 1, MAX_SECRET_BINDINGS))
    return data


def _refusal_words(request: ConsoleRequest, exc: OccError, formset: BaseSecretBindingFormSet, expected: int,
                   configuration_id: str) -> str:
    """A refused save in plain words; a Secret that is gone is also marked on its row."""
    if isinstance(exc, Conflict):
        if _detail(request, configuration_id).configuration.generation != expected:
            return STALE
        return exc.message
    if isinstance(exc, NotFound):
        gone = {detail.path.split("/")[2] for detail in exc.details if detail.path.startswith("/secretBindings/")}
        for form in formset.forms:
            if form.cleaned_data.get("env_name") in gone:
                form.add_error("secret", "This Secret no longer exists. Choose another.")
        return "A chosen Secret no longer exists, so nothing was saved."
    return exc.message


@require_http_methods(["GET", "POST"])
@console_view
def configuration_bindings(request: ConsoleRequest, namespace_id: str, configuration_id: str) -> HttpResponse:
    """GET: the Secrets the Configuration gives its runtime, one row per environment variable, and
    an empty row to add one. POST: replace them (the document kept, the generation it was opened
    at checked) through ``configuration_update``, the service of the API's PATCH with
    ``secretBindings``; ``add_row`` shows one more empty row and saves nothing."""
    console = current(request)
    detail = _detail(request, configuration_id)
    choices = {"secret_choices": _secret_choices(request, detail)}
    if request.method == "GET":
        if not configuration_actions_on(console.actor, detail.configuration)["update"]:
            return _read_only(request, detail.configuration)
        rows = [{"env_name": b.env_name, "secret": b.secret_id} for b in detail.bindings]
        formset = SecretBindingFormSet(initial=rows, prefix=BINDINGS_PREFIX, form_kwargs=choices)
        opened = OpenedAtForm(initial={"generation": detail.configuration.generation})
        return render_page(request, BINDINGS, _bindings_context(request, detail, opened, formset),
                           partial="configuration-bindings-form")
    opened = OpenedAtForm(request.POST)
    if "add_row" in request.POST:
        formset = SecretBindingFormSet(_one_more_row(request.POST), prefix=BINDINGS_PREFIX, form_kwargs=choices)
        return render_page(request, BINDINGS, _bindings_context(request, detail, opened, formset, adding=True),
                           partial="configuration-bindings-form")
    formset = SecretBindingFormSet(request.POST, prefix=BINDINGS_PREFIX, form_kwargs=choices)
    if not (opened.is_valid() and formset.is_valid()):
        return render_page(request, BINDINGS, _bindings_context(request, detail, opened, formset),
                           partial="configuration-bindings-form")
    expected = opened.cleaned_data["generation"]
    bindings = {name: SecretBinding(source=SecretRef.to(namespace_id, secret_id))
                for name, secret_id in formset.bindings().items()}
    try:
        updated = configuration_update(
            actor=console.actor, namespace_id=namespace_id, configuration_id=configuration_id,
            command=build(ConfigurationUpdate, values=detail.configuration.values, secret_bindings=bindings),
            expected_generation=expected)
    except (InvalidRequest, Conflict, NotFound) as exc:
        refusal = _refusal_words(request, exc, formset, expected, configuration_id)
        context = _bindings_context(request, detail, opened, formset, refusal=refusal)
        return render_page(request, BINDINGS, context, partial="configuration-bindings-form")
    messages.success(request, f"Secret bindings saved (generation {updated.generation}). "
                              "Agents get them from their next deploy.")
    return redirect_or_hx(request, reverse("console:configuration", args=[namespace_id, configuration_id]))


# --- delete -------------------------------------------------------------------------------------

@require_http_methods(["GET", "POST"])
@console_view
def configuration_delete_view(request: ConsoleRequest, namespace_id: str, configuration_id: str) -> HttpResponse:
    """GET: the confirmation (a dialog for htmx, a page otherwise). POST: delete; the refusal
    while Agents use it is explained in the dialog, with links to those Agents."""
    console = current(request)
    detail = _detail(request, configuration_id)
    if request.method == "GET":
        return render_page(request, DELETE, _detail_context(request, detail),
                           partial="configuration-delete-dialog")
    try:
        configuration_delete(actor=console.actor, namespace_id=namespace_id, configuration_id=configuration_id)
    except Conflict as exc:
        # 409 either way: htmx swaps the explanation into the open dialog (responseHandling).
        context = _detail_context(request, _detail(request, configuration_id), refusal=exc)
        return render_page(request, DELETE, context, partial="configuration-delete-body", status=exc.status)
    messages.success(request, f"Configuration {configuration_id} deleted.")
    return redirect_or_hx(request, reverse("console:configurations", args=[namespace_id]))


# --- the editor's check -------------------------------------------------------------------------

def _checked(text: str) -> list[PlacedProblem]:
    if len(text) > MAX_CHECKED_CHARS:
        return [PlacedProblem("", "TOO_LONG", f"The document is longer than {MAX_CHECKED_CHARS} characters.",
                              1, 1, 1, 2)]
    return sorted(document_problems(text), key=lambda p: (p.line, p.column))


@require_POST
@console_view
def configuration_check(request: ConsoleRequest, namespace_id: str, configuration_id: str | None = None
                        ) -> JsonResponse:
    """``{"problems": [{pointer, code, message, line, column, endLine, endColumn}]}`` for the
    posted ``configuration_json``; only for whoever may create (or update this) Configuration.
    Nothing is saved or audited: it is the save's own validation, run early."""
    console = current(request)
    configuration_check_authorize(actor=console.actor, namespace_id=namespace_id, configuration_id=configuration_id)
    problems = _checked(request.POST.get("configuration_json", ""))
    return JsonResponse({"problems": [problem.as_json() for problem in problems]})


urlpatterns = [
    path("namespaces/<str:namespace_id>/configurations", configurations, name="configurations"),
    path("namespaces/<str:namespace_id>/configurations/new", configuration_new, name="configuration-new"),
    path("namespaces/<str:namespace_id>/configurations/check", configuration_check, name="configuration-check-new"),
    path("namespaces/<str:namespace_id>/configurations/<str:configuration_id>", configuration,
         name="configuration"),
    path("namespaces/<str:namespace_id>/configurations/<str:configuration_id>/edit", configuration_edit,
         name="configuration-edit"),
    path("namespaces/<str:namespace_id>/configurations/<str:configuration_id>/check", configuration_check,
         name="configuration-check"),
    path("namespaces/<str:namespace_id>/configurations/<str:configuration_id>/secrets", configuration_bindings,
         name="configuration-bindings"),
    path("namespaces/<str:namespace_id>/configurations/<str:configuration_id>/delete", configuration_delete_view,
         name="configuration-delete"),
]
