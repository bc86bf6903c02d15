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


# What the attacker used: each made a second Secret that looked like the first in one Namespace.
LOOK_ALIKES = [
    pytest.param("pay\u2060roll", id="word-joiner"),
    pytest.param("pay\u00adroll", id="soft-hyphen"),
    pytest.param("pay\u3164roll", id="hangul-filler"),
    pytest.param("pay\u1160roll", id="hangul-jungseong-filler"),
    pytest.param("payroll\U000e0041", id="tag-character"),
    pytest.param("pay\u180eroll", id="mongolian-vowel-separator"),
    pytest.param("pay\u034froll", id="combining-grapheme-joiner"),
    pytest.param("payroll\ufe0f", id="variation-selector"),
    pytest.param("p\u0430yroll", id="cyrillic-a-among-latin"),
    pytest.param("\u0440ayroll", id="cyrillic-er-among-latin"),
    pytest.param("\uff50\uff41\uff59\uff52\uff4f\uff4c\uff4c", id="fullwidth"),
    pytest.param("\ufb01nance", id="ligature"),
    pytest.param("payroll\u00a0eu", id="no-break-space"),
]


@pytest.mark.parametrize("name", LOOK_ALIKES)
def test_names_that_look_like_another_are_refused(name):
    assert refused(NamespaceCreate, {"name": name}) == [{"code": "INVALID_FORMAT", "path": "/name"}]
    assert refused(SecretCreate, {"name": name, "value": "v"}) == [{"code": "INVALID_FORMAT", "path": "/name"}]


def test_a_name_is_kept_in_nfc_so_both_forms_are_one_name():
    composed, decomposed = "caf\u00e9", "cafe\u0301"
    assert parse(NamespaceCreate, {"name": decomposed}).name == composed
    assert parse(NamespaceCreate, {"name": composed}).name == composed


def test_the_messages_say_what_to_write_instead():
    with pytest.raises(InvalidRequest) as caught:
        parse(NamespaceCreate, {"name": "\uff50ay"})
    assert "fullwidth" in caught.value.message
    assert "'pay'" in caught.value.message
    with pytest.raises(InvalidRequest) as caught:
        parse(NamespaceCreate, {"name": "p\u0430y"})
    assert "one script" in caught.value.message
