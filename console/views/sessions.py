"""The fleet's Sessions page, a transcript and its export, and the approvals inbox (issue 29).

``console:sessions`` lists the sessions of every Agent whose conversations the person may read
(``occ.selectors.agent_sessions``), filtered by Agent, channel, person and time, in keyset pages;
its filter form and pager swap ``#session-results``. ``console:agent-transcript`` reads one
transcript from the Agent's gateway (each read audited); a search within it swaps
``#transcript-entries``; its export links download it as Markdown or JSON from the API (the
console's session signs those requests in). ``console:approvals`` lists what the Agents the
person may answer for wait on; Approve and Deny post once and re-render ``#approval-list``.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.http import HttpResponse
from django.urls import path, reverse
from django.views.decorators.http import require_GET, require_POST

from console.common import ConsoleRequest, console_view, current, render_page
from console.forms.base import TimeRangeMixin
from occ.errors import InvalidRequest
from occ.iam.permissions import Action
from occ.models import Agent, AgentSession
from occ.selectors.agent_sessions import SessionQuery, agents_allowing, session_channels, session_page
from occ.services.agent_sessions import agent_transcript_read
from occ.services.approvals import approval_decide, approvals_pending

LIST = "console/sessions/list.html"
TRANSCRIPT = "console/sessions/transcript.html"
INBOX = "console/sessions/approvals.html"
_WHEN = forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M")


class SessionFilterForm(TimeRangeMixin):
    agent = forms.ChoiceField(label="Agent", required=False)
    channel = forms.ChoiceField(label="Channel", required=False)
    person = forms.CharField(label="With", required=False, max_length=200, strip=True,
                             help_text="Part of who the session is with.")
    since = forms.DateTimeField(label="Active from (UTC)", required=False, widget=_WHEN)
    until = forms.DateTimeField(label="Active until (UTC)", required=False, widget=_WHEN)

    def __init__(self, data: Any, *, agents: list[Agent], channels: list[str]) -> None:
        super().__init__(data)
        agent_field, channel_field = self.fields["agent"], self.fields["channel"]
        assert isinstance(agent_field, forms.ChoiceField)
        assert isinstance(channel_field, forms.ChoiceField)
        agent_field.choices = [("", "Every Agent"), *((a.id, a.name) for a in agents)]
        channel_field.choices = [("", "Every channel"), *((c, c) for c in channels)]

    def query(self) -> SessionQuery:
        data = self.cleaned_data
        return SessionQuery(agent_id=data.get("agent") or "", channel=data.get("channel") or "",
                            person=data.get("person") or "", since=data.get("since"), until=data.get("until"))


def transcript_url(namespace_id: str, agent_id: str, session_id: str) -> str:
    return reverse("console:agent-transcript", args=[namespace_id, agent_id, session_id])


@require_GET
@console_view
def sessions_list(request: ConsoleRequest) -> HttpResponse:
    actor = current(request).actor
    agents = list(Agent.objects.filter(agents_allowing(actor, Action.READ_CONVERSATIONS, agent=""))
                  .order_by("name")[:500])
    form = SessionFilterForm(request.GET, agents=agents, channels=session_channels(actor=actor))
    rows: list[AgentSession] = []
    next_cursor: str | None = None
    if form.is_valid():
        rows, next_cursor = session_page(actor=actor, query=form.query(), after=request.GET.get("after", "")[:200])
    filters = request.GET.copy()
    filters.pop("after", None)
    context = {"console": current(request), "nav": "sessions", "form": form, "rows": rows, "next": next_cursor,
               "filters": filters.urlencode(), "filtered": any(v for v in filters.values()),
               "first_page": not request.GET.get("after"), "readable_agents": bool(agents)}
    return render_page(request, LIST, context, partial="session-results")


@require_GET
@console_view
def transcript_view(request: ConsoleRequest, namespace_id: str, agent_id: str, session_id: str) -> HttpResponse:
    transcript = agent_transcript_read(actor=current(request).actor, namespace_id=namespace_id, agent_id=agent_id,
                                       session_id=session_id)
    query = request.GET.get("q", "").strip()[:200]
    api = f"/namespaces/{namespace_id}/agents/{agent_id}/sessions/{session_id}"  # the API: the export
    context = {"console": current(request), "nav": "sessions", "transcript": transcript,
               "session": transcript.session, "entries": transcript.searched(query), "query": query,
               "agent_url": reverse("console:agent", args=[namespace_id, agent_id]),
               "url": transcript_url(namespace_id, agent_id, session_id),
               "export": {"markdown": f"{api}?format=markdown", "json": api}}
    return render_page(request, TRANSCRIPT, context, partial="transcript-entries")


def _inbox(request: ConsoleRequest, status: int = 200) -> HttpResponse:
    inbox = approvals_pending(actor=current(request).actor)
    context = {"console": current(request), "nav": "approvals", "inbox": inbox}
    return render_page(request, INBOX, context, partial="approval-list", status=status)


@require_GET
@console_view
def approvals_inbox(request: ConsoleRequest) -> HttpResponse:
    return _inbox(request)


@require_POST
@console_view
def approval_decision(request: ConsoleRequest, namespace_id: str, agent_id: str, kind: str,
                      approval_id: str) -> HttpResponse:
    decision = request.POST.get("decision", "")
    if kind not in ("exec", "plugin") or decision not in ("approve", "deny"):
        raise InvalidRequest("Choose Approve or Deny.")
    approval_decide(actor=current(request).actor, namespace_id=namespace_id, agent_id=agent_id,
                    kind=kind,  # type: ignore[arg-type]
                    approval_id=approval_id, decision=decision)  # type: ignore[arg-type]
    messages.success(request, "Approved once." if decision == "approve" else "Denied.")
    return _inbox(request)


urlpatterns = [
    path("sessions", sessions_list, name="sessions"),
    path("approvals", approvals_inbox, name="approvals"),
    path("namespaces/<str:namespace_id>/agents/<str:agent_id>/sessions/<str:session_id>", transcript_view,
         name="agent-transcript"),
    path("namespaces/<str:namespace_id>/agents/<str:agent_id>/approvals/<str:kind>/<path:approval_id>",
         approval_decision, name="approval-decide"),
]
