"""The one way every kind of driver is named and found (occ/driver_registry.py)."""

from __future__ import annotations

import sys
import types

import pytest

from occ.driver_registry import DriverRegistry, UnknownDriver


class Sample:
    def __init__(self, where: str = "default") -> None:
        self.where = where


@pytest.fixture
def registry(monkeypatch) -> DriverRegistry[Sample]:
    module = types.ModuleType("tests_registry_sample")
    module.Sample = Sample  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, module.__name__, module)
    return DriverRegistry({"sample": f"{module.__name__}.Sample", "absent": "tests_registry_absent.Driver"})


def test_one_object_per_id_and_arguments_until_forgotten(registry):
    first = registry.get("sample")
    assert registry.get("sample") is first
    elsewhere = registry.get("sample", where="elsewhere")
    assert elsewhere is not first
    assert (first.where, elsewhere.where) == ("default", "elsewhere")
    assert registry.get("sample", where="elsewhere") is elsewhere

    registry.forget()

    assert registry.get("sample") is not first


def test_an_unknown_id_is_unknown_and_a_missing_module_fails_only_when_selected(registry):
    assert registry.ids() == ["absent", "sample"]
    with pytest.raises(UnknownDriver):
        registry.get("nothing")
    with pytest.raises(ModuleNotFoundError) as missing:
        registry.get("absent")
    assert missing.value.name == registry.module_of("absent") == "tests_registry_absent"
