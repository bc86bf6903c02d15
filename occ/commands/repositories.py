"""Repository binding commands: ``{repositoryRef: "owner/name", profile}``, at most 16 with
unique references. The driver checks, at admission, that the installation reaches each one."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, BeforeValidator, Field

from occ.commands.base import Command, located, one_of, problem
from occ.documents.repositories import PROFILES, RepositoryBinding
from occ.drivers.repositories.base import REPOSITORY_REF, canonical_ref
from occ.errors import DetailCode

REPOSITORY_BINDINGS_MAX = 16
REPOSITORY_REF_MAX = 140


def _repository_ref(value: object) -> object:
    if not isinstance(value, str):
        raise problem(DetailCode.INVALID_TYPE, "repositoryRef must be a string.")
    if len(value) > REPOSITORY_REF_MAX:
        raise problem(DetailCode.TOO_LONG, f"repositoryRef must be at most {REPOSITORY_REF_MAX} characters.")
    ref = canonical_ref(value)
    if not REPOSITORY_REF.fullmatch(ref):
        raise problem(DetailCode.INVALID_FORMAT, "repositoryRef must be a GitHub repository as owner/name.")
    return ref


RepositoryRef = Annotated[str, BeforeValidator(_repository_ref),
                          Field(json_schema_extra={"maxLength": REPOSITORY_REF_MAX, "pattern": REPOSITORY_REF.pattern})]


class RepositoryBindingInput(Command):
    """One repository and the explicit access profile the Agent gets to it."""

    repository_ref: RepositoryRef
    profile: Annotated[Literal["git-read", "git-write", "git-full"],
                       one_of(*PROFILES, message="profile must be git-read, git-write or git-full.")]

    def document(self) -> RepositoryBinding:
        return RepositoryBinding(repository_ref=self.repository_ref, profile=self.profile)


def _unique(bindings: list[RepositoryBindingInput]) -> list[RepositoryBindingInput]:
    seen: set[str] = set()
    for index, binding in enumerate(bindings):
        if binding.repository_ref in seen:
            raise located((index, "repositoryRef"), DetailCode.INVALID_VALUE,
                          "Each repository can be bound once; remove the repeated repositoryRef.")
        seen.add(binding.repository_ref)
    return bindings


RepositoryBindings = Annotated[list[RepositoryBindingInput], Field(max_length=REPOSITORY_BINDINGS_MAX),
                               AfterValidator(_unique)]


def binding_documents(bindings: list[RepositoryBindingInput] | None) -> list[RepositoryBinding]:
    return [binding.document() for binding in bindings or []]
