"""The Usage page's forms: the filter (days and one Agent) and an administrator's budget."""

from __future__ import annotations

from datetime import date, timedelta
from decimal import Decimal
from typing import Any

from django import forms

from console.forms.access import DescribedForm
from occ.commands.budgets import BudgetSet
from occ.ids import IdPrefix, is_valid_id

MAX_DAYS = 400
_DAY = forms.DateInput(attrs={"type": "date"}, format="%Y-%m-%d")


class UsageFilterForm(forms.Form):
    since = forms.DateField(label="From (UTC day)", required=False, widget=_DAY)
    until = forms.DateField(label="Until (UTC day, inclusive)", required=False, widget=_DAY)
    agent = forms.ChoiceField(label="Agent", required=False, choices=[("", "Every Agent")])

    def __init__(self, *args: Any, agents: list[tuple[str, str]], today: date, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.today = today
        field = self.fields["agent"]
        assert isinstance(field, forms.ChoiceField)
        field.choices = [("", "Every Agent"), *agents]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        until = cleaned.get("until") or self.today
        since = cleaned.get("since") or until.replace(day=1)
        if since > until:
            self.add_error("until", "Until must not be before From.")
        elif until - since > timedelta(days=MAX_DAYS):
            self.add_error("since", f"Show at most {MAX_DAYS} days at a time.")
        cleaned["since"], cleaned["until"] = since, until
        return cleaned


class BudgetForm(DescribedForm):
    ids = "budget_%s"
    places = {"agent_id": "agent", "period": "period", "limit": "limit", "webhook_url": "webhook_url",
              "webhook_secret_id": "webhook_secret"}

    agent = forms.ChoiceField(label="For", required=False, help_text="The whole Namespace, or one Agent.")
    period = forms.ChoiceField(label="Per", choices=[("month", "UTC month"), ("day", "UTC day")])
    limit = forms.DecimalField(label="Limit (USD)", min_value=Decimal("0.01"), max_digits=20, decimal_places=8,
                               help_text="At 100 % the Agents it covers are paused until it is raised or overridden.")
    webhook_url = forms.URLField(label="Webhook URL", required=False, max_length=2000, assume_scheme="https",
                                 help_text="Optional: POSTed at 50, 80 and 100 %, tried again while it fails. "
                                           "A public address only (not a private or loopback one).")
    webhook_secret = forms.ChoiceField(label="Signing Secret", required=False,
                                       help_text="Optional: its value signs the webhook (X-OCC-Signature).")

    def __init__(self, *args: Any, agents: list[tuple[str, str]], secrets: list[tuple[str, str]],
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name, choices in (("agent", [("", "The Namespace"), *agents]),
                              ("webhook_secret", [("", "None"), *secrets])):
            field = self.fields[name]
            assert isinstance(field, forms.ChoiceField)
            field.choices = choices

    def command(self) -> BudgetSet:
        data = self.cleaned_data
        return BudgetSet(agent_id=data.get("agent") or None, period=data["period"], limit=data["limit"],
                         webhook_url=data.get("webhook_url") or None,
                         webhook_secret_id=data.get("webhook_secret") or None)


class BudgetDeleteForm(forms.Form):
    """Remove one budget of the Namespace: the budget's id, posted from its row (the service
    authorizes the administrator, finds the budget in the Namespace and audits the removal)."""

    budget = forms.CharField(widget=forms.HiddenInput, max_length=64)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("auto_id", False)  # one form per row: no element ids to repeat
        super().__init__(*args, **kwargs)

    def clean_budget(self) -> str:
        value = str(self.cleaned_data["budget"]).strip()
        if not is_valid_id(value, IdPrefix.BUDGET):
            raise forms.ValidationError("Pick a budget of the list.")
        return value
