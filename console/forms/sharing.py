"""The Agent page's Share form: whom and at which level. It builds the command; the command and
``occ.services.agent_sharing`` judge it, and a refusal lands on the field it names."""

from __future__ import annotations

from django import forms

from console.forms.base import CommandForm
from occ.commands.base import build
from occ.commands.iam import AgentShare

LEVEL_CHOICES = (("chat", "Can chat"), ("deploy", "Can deploy"), ("administer", "Can administer"))


class ShareForm(CommandForm):
    subject = forms.CharField(required=False)
    level = forms.CharField(required=False)
    places = {"subject_id": "subject", "level": "level"}

    def command(self) -> AgentShare:
        """``InvalidRequest`` when nobody or no level was chosen."""
        return build(AgentShare, subject_id=self.cleaned_data.get("subject") or "",
                     level=self.cleaned_data.get("level") or "")
