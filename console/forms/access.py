"""The ``django.forms`` forms of the Members and access pages.

A form normalizes what was typed and offers the choices the selectors give; the rules are the
commands' and the services' (the same ones the API applies), and a refusal lands on the field
that fills the place it names (``CommandForm.refuse``, each form's ``places``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from django import forms

from console.forms.base import CommandForm
from occ.commands.accounts import PASSWORD_MAX, USERNAME_MAX
from occ.commands.common import NAME_MAX_CODE_POINTS
from occ.commands.iam import ROLE_ACTIONS, Permission, split_permission
from occ.commands.service_keys import EXPIRES_IN_DEFAULT, KEY_NAME_MAX
from occ.iam.permissions import Kind
from occ.selectors.access import Choice

DAY = 86_400
# Valid kinds of which the product has no resources yet: a Role permission on them would grant nothing.
KINDS_WITHOUT_RESOURCES = frozenset({Kind.PRESET, Kind.SERVICE_ACCOUNT, Kind.CREDENTIAL_SOURCE})
KIND_LABELS = {Kind.NAMESPACE: "Namespace", Kind.CONFIGURATION: "Configurations", Kind.PRESET: "Presets",
               Kind.SERVICE_ACCOUNT: "Service accounts", Kind.SECRET: "Secrets",
               Kind.CREDENTIAL_SOURCE: "Credential sources", Kind.AGENT: "Agents",
               Kind.AGENT_REVISION: "Agent revisions"}


def _choices(items: Iterable[Choice]) -> list[tuple[str, str]]:
    return [(c.value, c.label) for c in items]


def _offer(form: forms.Form, name: str, choices: list[tuple[str, str]]) -> None:
    field = form.fields[name]
    assert isinstance(field, forms.ChoiceField)
    field.choices = choices


class DescribedForm(CommandForm):
    """Fields described by their hint and, once refused, by their errors (aria-describedby).
    Each form has its own id prefix (``ids``): several share a page, and a label must name its
    own field."""

    ids = "id_%s"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("auto_id", self.ids)
        super().__init__(*args, **kwargs)

    def describe(self) -> None:
        for name, field in self.fields.items():
            element = self.ids % name
            described = [f"{element}-hint"] if field.help_text else []
            if self.is_bound and self.errors.get(name):
                field.widget.attrs["aria-invalid"] = "true"
                described.append(f"{element}-error")
            if described:
                field.widget.attrs["aria-describedby"] = " ".join(described)

    def full_clean(self) -> None:
        super().full_clean()
        self.describe()

    def add_error(self, field: str | None, error: Any) -> None:
        super().add_error(field, error)
        self.describe()


class ServicePrincipalForm(DescribedForm):
    ids = "principal_%s"
    name = forms.CharField(label="Name", max_length=NAME_MAX_CODE_POINTS, strip=False,
                           help_text="What uses it, e.g. \"CI deploys\". Keys are issued on its page.")
    places = {"name": "name"}


class ServiceKeyForm(DescribedForm):
    ids = "key_%s"
    name = forms.CharField(label="Key name", max_length=KEY_NAME_MAX, strip=False,
                           help_text=f"Up to {KEY_NAME_MAX} characters, e.g. \"github-actions\".")
    expires_in_days = forms.IntegerField(label="Expires after (days)", min_value=1, max_value=365,
                                         initial=EXPIRES_IN_DEFAULT // DAY, help_text="From 1 to 365 days.")
    places = {"name": "name", "expires_in": "expires_in_days"}


class RoleForm(DescribedForm):
    ids = "role_%s"
    name = forms.CharField(label="Role name", max_length=NAME_MAX_CODE_POINTS, strip=False)
    permissions = forms.MultipleChoiceField(
        label="Permissions", widget=forms.CheckboxSelectMultiple,
        choices=[(KIND_LABELS[kind], [(f"{action}:{kind}", f"{action} {kind.replace('_', ' ')}")
                                      for action in sorted(actions)])
                 for kind, actions in ROLE_ACTIONS.items() if kind not in KINDS_WITHOUT_RESOURCES],
        help_text="A Role is fixed once made: to change one, create another and move its bindings.")
    places = {"name": "name", "permissions": "permissions"}
    LIMITED_HELP = ("Only the permissions you hold throughout this Namespace are offered: a Namespace "
                    "administrator grants no more than they hold. A Role is fixed once made.")

    def __init__(self, *args: Any, grantable: Callable[[list[str]], list[str]] | None = None, **kwargs: Any) -> None:
        """``grantable``: which of the offered permissions the caller may put in a Role
        (``occ.selectors.iam.role_grantable``); the others are not offered."""
        super().__init__(*args, **kwargs)
        if grantable is None:
            return
        field = self.fields["permissions"]
        assert isinstance(field, forms.MultipleChoiceField)
        groups: list[tuple[str, list[tuple[str, str]]]] = list(field.choices)  # type: ignore[arg-type]
        offered = set(grantable([value for _, options in groups for value, _ in options]))
        limited = [(group, [(v, label) for v, label in options if v in offered]) for group, options in groups]
        if sum(len(options) for _, options in limited) < sum(len(options) for _, options in groups):
            field.help_text = self.LIMITED_HELP
        field.choices = [(group, options) for group, options in limited if options]

    def permission_pairs(self) -> list[Permission]:
        pairs = (split_permission(value) for value in self.cleaned_data["permissions"])
        return [Permission(action=action, resource_kind=kind) for action, kind in pairs]


class BindingForm(DescribedForm):
    ids = "grant_%s"
    subject = forms.ChoiceField(label="Principal", help_text="A person, a service principal or an Agent.")
    role = forms.ChoiceField(label="Role")
    target = forms.ChoiceField(label="On", help_text="The Namespace itself or one resource in it.")
    places = {"subject_id": "subject", "role_id": "role", "resource_kind": "target", "resource_id": "target"}

    def __init__(self, *args: Any, subjects: Iterable[Choice], roles: Iterable[Choice], targets: Iterable[Choice],
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _offer(self, "subject", [("", "Choose a principal"), *_choices(subjects)])
        _offer(self, "role", [("", "Choose a Role"), *_choices(roles)])
        _offer(self, "target", _choices(targets))

    def target_parts(self) -> tuple[str, str]:
        kind, _, resource_id = self.cleaned_data["target"].partition(":")
        return kind, resource_id


class AccountForm(DescribedForm):
    ids = "account_%s"
    username = forms.CharField(label="Username", max_length=USERNAME_MAX, strip=False,
                               help_text="What they sign in with: letters, digits and @ . + - _.")
    name = forms.CharField(label="Display name", required=False, max_length=NAME_MAX_CODE_POINTS, strip=False,
                           help_text="Shown in the console and the audit log; the username when empty.")
    password = forms.CharField(label="Initial password", strip=False, max_length=PASSWORD_MAX,
                               widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
                               help_text="At least 12 characters. Give it to them privately.")
    role = forms.ChoiceField(label="Role", required=False,
                             help_text="None: they can sign in and see nothing until someone grants them access.")
    namespaces = forms.MultipleChoiceField(
        label="On Namespaces", required=False, widget=forms.CheckboxSelectMultiple,
        help_text="The Role applies inside these. None chosen: everywhere in the Installation.")
    places = {"username": "username", "name": "name", "password": "password", "role_id": "role",
              "namespace_ids": "namespaces"}

    def __init__(self, *args: Any, roles: Iterable[Choice], namespaces: Iterable[Choice], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _offer(self, "role", [("", "No Role"), *_choices(roles)])
        _offer(self, "namespaces", _choices(namespaces))


class PasswordSetForm(DescribedForm):
    ids = "onetime_%s"
    password = forms.CharField(label="One-time password", strip=False, max_length=PASSWORD_MAX,
                               widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
                               help_text="At least 12 characters. They must choose their own after signing in with it.")
    places = {"password": "password"}


class SingleSignOnForm(DescribedForm):
    ids = "sso_%s"
    email = forms.CharField(label="Email", required=False, max_length=254,
                            widget=forms.EmailInput(attrs={"autocomplete": "off"}),
                            help_text="When the provider says this email is verified, their first sign-in links them.")
    subject = forms.CharField(label="Subject at the provider", required=False, max_length=255,
                              help_text="The provider's “sub” for them: links them now. Empty: not linked.")
    places = {"email": "email", "subject": "subject"}


class PasswordChangeForm(DescribedForm):
    ids = "own_%s"
    current_password = forms.CharField(
        label="Current password", strip=False, max_length=PASSWORD_MAX,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "current-password"}))
    new_password = forms.CharField(
        label="New password", strip=False, max_length=PASSWORD_MAX,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text="At least 12 characters, not a common one.")
    places = {"current_password": "current_password", "new_password": "new_password"}
