"""Whether a signed-in person is an operator: the same answer with or without the session Actor
the console has already read, and with it no second read of the Principal and its policy."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from occ.iam.actor import Actor, Source
from occ.iam.sessions import is_operator
from tests.factories import grant, human

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("permissions", "operator"),
    [
        pytest.param(["administer:installation"], True, id="administers"),
        pytest.param(["read:agent"], False, id="does-not"),
    ],
)
def test_the_session_actor_gives_the_same_answer_without_reading_again(permissions, operator):
    principal = human("someone")
    grant(principal, *permissions)
    actor = Actor(principal=principal, source=Source.CONSOLE)
    actor.policy  # the console's request has loaded it by now  # noqa: B018
    assert is_operator(principal.user) is operator
    with CaptureQueriesContext(connection) as queries:
        assert is_operator(principal.user, actor=actor) is operator
    assert len(queries) == 0


def test_another_persons_actor_is_not_used():
    operator, other = human("operator"), human("other")
    grant(operator, "administer:installation")
    assert is_operator(other.user, actor=Actor(principal=operator, source=Source.CONSOLE)) is False
    assert is_operator(operator.user, actor=Actor(principal=other, source=Source.CONSOLE)) is True


def test_an_inactive_person_is_never_an_operator():
    principal = human("left")
    grant(principal, "administer:installation")
    principal.user.is_active = False
    principal.user.save()
    assert is_operator(principal.user, actor=Actor(principal=principal, source=Source.CONSOLE)) is False
