"""Names: one rule (``occ.commands.common.Name``) for every resource, so none can pass for another."""

from __future__ import annotations

import pytest

from occ.commands.base import parse
from occ.commands.namespaces import NamespaceCreate
from occ.commands.secrets import SecretCreate
from occ.commands.service_keys import ServiceKeyCreate
from occ.errors import InvalidRequest

INVISIBLE = [*range(0x200B, 0x200E), *range(0x202A, 0x202F), *range(0x2066, 0x206A), 0xFEFF, 0x200E, 0x200F, 0x061C]


def refused(command, body) -> list[dict[str, str]]:
    with pytest.raises(InvalidRequest) as caught:
        parse(command, body)
    return [d.as_wire() for d in caught.value.details]


@pytest.mark.parametrize("code_point", INVISIBLE, ids=lambda c: f"U+{c:04X}")
@pytest.mark.parametrize("where", ["inside", "start", "end"])
def test_invisible_and_reordering_characters_are_refused(code_point, where):
    char = chr(code_point)
    name = {"inside": f"pay{char}roll", "start": f"{char}payroll", "end": f"payroll{char}"}[where]
    assert refused(NamespaceCreate, {"name": name}) == [{"code": "INVALID_FORMAT", "path": "/name"}]
    assert refused(SecretCreate, {"name": name, "value": "v"}) == [{"code": "INVALID_FORMAT", "path": "/name"}]


def test_the_message_names_the_rule():
    with pytest.raises(InvalidRequest) as caught:
        parse(NamespaceCreate, {"name": "evil\u202egnp.exe"})
    assert "invisible or text-direction" in caught.value.message


@pytest.mark.parametrize("name", ["Ünïcödé team", "финансы", "مالية", "財務部", "a b", "emoji \U0001f600", "x" * 200])
def test_visible_text_in_any_script_is_kept(name):
    assert parse(NamespaceCreate, {"name": name}).name == name


def test_service_key_names_follow_the_same_rule():
    details = refused(ServiceKeyCreate, {"name": "ci\u200bkey"})
    assert {"code": "INVALID_FORMAT", "path": "/name"} in details
