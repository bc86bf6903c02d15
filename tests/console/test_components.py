"""The console's components (console/presentation.py, console/templatetags/ui.py, templates/console/components/)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.template import Context, Template, TemplateSyntaxError

from console import presentation
from console.presentation import human_time, pill_for, short_id

NOW = datetime(2026, 12, 2, 10, 0, 0, tzinfo=UTC)
AGENT_ID = "agt_1f3c9a2b-1234-4abc-8def-0123456789ab"


def render(text: str, **context) -> str:
    return Template(text).render(Context(context))


def test_every_pill_has_one_of_the_five_tones_and_a_label():
    for kind, states in presentation.STATUS_PILLS.items():
        for state, (tone, label) in states.items():
            assert tone in presentation.TONES, (kind, state)
            assert label, (kind, state)


@pytest.mark.parametrize(("kind", "state", "tone", "label"), [
    pytest.param("deployment", "running", "progress", "Deploying", id="a running deployment is in progress"),
    pytest.param("runtime", "running", "ok", "Running", id="a running gateway is healthy"),
    pytest.param("runtime", "failed", "danger", "Not running", id="failed gateway"),
    pytest.param("runtime", "stopped", "neutral", "Stopped", id="stopped on purpose"),
    pytest.param("namespace", "provisioning", "progress", "Provisioning", id="namespace provisioning"),
    pytest.param("namespace", "weird_new_state", "neutral", "Weird new state", id="unmapped state is neutral"),
    pytest.param("deployment", None, "warn", "Unknown", id="no state is unknown"),
])
def test_pill_for_maps_a_state_in_its_kind(kind, state, tone, label):
    pill = pill_for(kind, state)

    assert (pill.tone, pill.label) == (tone, label)


def test_status_pill_tag_renders_the_mapping_and_refuses_an_unknown_kind():
    assert render('{% status_pill "failed" "deployment" %}') == \
        '<span class="pill pill-danger" data-status="failed">Failed</span>'
    assert render('{% status_pill "ready" "namespace" live=True %}') == \
        '<span class="pill pill-ok" data-status="ready" role="status">Ready</span>'
    with pytest.raises(TemplateSyntaxError, match="unknown kind"):
        render('{% status_pill "ready" "no-such-kind" %}')


@pytest.mark.parametrize(("delta", "text"), [
    pytest.param(timedelta(seconds=10), "just now", id="seconds"),
    pytest.param(timedelta(minutes=3), "3 min ago", id="minutes"),
    pytest.param(timedelta(minutes=59), "59 min ago", id="under an hour"),
    pytest.param(timedelta(hours=5), "5 h ago", id="hours"),
    pytest.param(timedelta(days=1), "1 day ago", id="one day"),
    pytest.param(timedelta(days=3), "3 days ago", id="days"),
    pytest.param(timedelta(days=30), "2026-11-02", id="older: the date"),
    pytest.param(-timedelta(minutes=4), "in 4 min", id="future"),
])
def test_human_time(delta, text):
    assert human_time(NOW - delta, now=NOW) == text


def test_time_html_carries_the_exact_time():
    html = presentation.time_html(NOW - timedelta(minutes=3), now=NOW)

    assert html == ('<time datetime="2026-12-02T09:57:00.000Z" title="2026-12-02 09:57:00 UTC" data-relative>'
                    "3 min ago</time>")
    assert presentation.time_html("2026-12-02T09:00:00.5Z", now=NOW).startswith(
        '<time datetime="2026-12-02T09:00:00.500Z"')
    assert presentation.time_html(None) == '<span class="muted">—</span>'


def test_short_id_keeps_the_prefix_and_eight_characters():
    assert short_id(AGENT_ID) == "agt_1f3c9a2b"
    assert short_id("unprefixed-identifier-value") == "unprefixed-i"


def test_short_id_tag_shows_the_short_id_and_copies_the_full_one():
    html = render("{% short_id value %}", value=AGENT_ID)

    assert f'<code title="{AGENT_ID}">agt_1f3c9a2b</code>' in html
    assert f'data-copy="{AGENT_ID}"' in html
    assert 'aria-label="Copy ID agt_1f3c9a2b"' in html
    assert html.count(AGENT_ID) == 2  # title and data-copy: never as the visible text


def test_ref_puts_the_name_first_and_escapes_it():
    html = render('{% ref name value url="/x" %}', name="<b>bot</b>", value=AGENT_ID)

    assert html.startswith('<span class="ref"><a class="ref-name" href="/x">&lt;b&gt;bot&lt;/b&gt;</a> '
                           '<span class="id-chip">')
    assert render("{% ref '' value %}", value=AGENT_ID).startswith('<span class="ref"><span class="id-chip">')


def test_dotted_breaks_wraps_after_dots_and_underscores_and_escapes():
    html = render("{{ action|dotted_breaks }}", action="openclaw.agents.runtime_logs.<view>")
    assert html == "openclaw.<wbr>agents.<wbr>runtime_<wbr>logs.<wbr>&lt;view&gt;"


def test_nav_item_marks_the_current_page():
    template = '{% nav_item "agents" "/a" "Agents" "bot" %}{% nav_item "secrets" "/s" "Secrets" "key-round" %}'
    html = render(template, nav="agents")

    assert '<li><a href="/a" aria-current="page"><svg class="icon"' in html
    assert '<li><a href="/s"><svg class="icon"' in html
    assert html.count("aria-current") == 1


def test_toast_and_empty_state_components():
    toast = render('{% include "console/components/toast.html" with level="error" text=message %}', message="<boom>")
    assert toast.startswith('<div class="toast toast-error">')
    assert "#circle-alert" in toast
    assert "&lt;boom&gt;" in toast
    assert 'aria-label="Dismiss"' in toast

    empty = render('{% include "console/components/empty_state.html" with icon="bot" title="No Agents yet" '
                   'text="Create one." action_url="/new" action_label="Create Agent" %}')
    assert "#bot" in empty
    assert "<strong>No Agents yet</strong>" in empty
    assert '<a class="button primary" href="/new">Create Agent</a>' in empty


# --- the confirmation dialog (components/confirm_dialog.html) ---------------------------------------

CONFIRMATIONS = [
    pytest.param("console/access/key_revoke.html", "key-revoke", "Revoke key", id="key-revoke"),
    pytest.param("console/access/role_delete.html", "role-delete", "Delete Role", id="role-delete"),
    pytest.param("console/access/binding_revoke.html", "binding-revoke", "Revoke", id="binding-revoke"),
    pytest.param("console/configurations/delete.html", "configuration-delete", "Delete Configuration",
                 id="configuration-delete"),
    pytest.param("console/secrets/delete.html", "secret-delete", "Delete Secret", id="secret-delete"),
    pytest.param("console/namespaces/delete.html", "namespace-delete", "Delete Namespace", id="namespace-delete"),
]


def confirmation_context(**extra):
    from types import SimpleNamespace as Thing

    return {
        "namespace_id": "ns_1", "modal": False, "refusal": None,
        "ns": Thing(id="ns_1", name="team <b>", status="ready"),
        "principal": Thing(id="prn_1", name="CI <b>"), "key": Thing(id="key_1", name="deploy <b>"),
        "role": Thing(id="rol_1", name="Readers <b>"), "secret": Thing(id="sec_1", name="token <b>"),
        "configuration": Thing(id="cfg_1"), "detail": Thing(summary=Thing(agents=[], hidden_agents=0)),
        "binding": Thing(binding=Thing(id="bnd_1"), role_name="Readers <b>", subject_name="CI <b>",
                         subject_kind="service_principal", target_label="the Namespace"),
        **extra,
    }


@pytest.mark.parametrize(("template", "prefix", "submit"), CONFIRMATIONS)
def test_every_confirmation_is_the_one_component_with_cancel_focused(template, prefix, submit):
    import re

    from django.template.loader import get_template, render_to_string

    source = get_template(template).template.source
    assert "<dialog" not in source, "the dialog comes from the component"
    assert "data-close-modal" not in source
    dialog = render_to_string(f"{template}#{prefix}-dialog", confirmation_context(modal=True))
    assert re.match(rf'\s*<dialog data-modal id="{prefix}-dialog" aria-labelledby="{prefix}-title">', dialog)
    assert f'<div id="{prefix}-body">' in dialog
    assert f'hx-target="#{prefix}-body"' in dialog
    assert "<b>" not in dialog, "names are escaped"
    actions = dialog[dialog.index('<div class="actions">'):]
    buttons = re.findall(r"<button[^>]*>.*?</button>", actions, re.S)
    assert buttons[0] == '<button type="button" data-close-modal autofocus>Cancel</button>', "Cancel first, focused"
    assert buttons[1].startswith('<button type="submit" class="danger">')
    assert buttons[1].endswith(f"{submit}</button>")
    page = render_to_string(f"{template}#{prefix}-body", confirmation_context())
    assert re.search(r'<a class="button" href="/console/[^"]*" autofocus>Cancel</a>', page), "without JavaScript too"
    assert "hx-post" not in page, "as a page, a plain POST answered with a page (its hx-target is the dialog's page's)"


# Dialogs that are forms rather than confirmations (each with its own fields), the only <dialog>s
# a template may write itself.
FORM_DIALOGS = {"console/secrets/value.html", "console/agents/create/page.html", "console/slack/modal.html"}


def test_every_other_dialog_is_a_form_and_confirmations_come_from_the_component():
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "templates"
    writers = {str(p.relative_to(root)) for p in root.rglob("*.html") if "<dialog" in p.read_text()}
    assert writers == {"console/components/confirm_dialog.html", *FORM_DIALOGS}


@pytest.mark.parametrize(("kind", "submit", "tone"), [
    pytest.param("stop", "Stop Agent", "danger", id="stop"),
    pytest.param("delete", "Permanently delete Agent", "danger", id="delete"),
    pytest.param("redeploy", "Redeploy v1", "primary", id="redeploy"),
])
def test_the_agents_confirmations_are_the_component_answered_by_the_header(kind, submit, tone):
    import re
    from types import SimpleNamespace as Thing

    from django.template.loader import render_to_string

    confirmation = {"id": f"{kind}-agent", "title": "Sure?", "action": "/console/x", "cancel": "/console/a",
                    "submit": submit, "submit_class": tone if tone != "danger" else None,
                    "idempotency_key": "console-k1" if kind == "redeploy" else None}
    context = {"confirmation": confirmation, "kind": kind, "revision": Thing(number=1, id="rev_1"), "modal": True}
    dialog = render_to_string(f"console/agent/confirm.html#{kind}-agent-dialog", context)
    assert re.match(rf'\s*<dialog data-modal id="{kind}-agent-dialog" aria-labelledby="{kind}-agent-title">', dialog)
    assert 'hx-post="/console/x" hx-target="#agent-header" hx-disabled-elt="find button[type=submit]"' in dialog
    actions = dialog[dialog.index('<div class="actions">'):]
    buttons = re.findall(r"<button[^>]*>.*?</button>", actions, re.S)
    assert buttons[0] == '<button type="button" data-close-modal autofocus>Cancel</button>', "Cancel first, focused"
    assert buttons[1].startswith(f'<button type="submit" class="{tone}">')
    assert buttons[1].endswith(f"{submit}</button>")
    assert ('name="idempotency_key" value="console-k1"' in dialog) == (kind == "redeploy")
