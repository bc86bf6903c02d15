from __future__ import annotations

import re

import pytest
from django.core.exceptions import ImproperlyConfigured

from occ.drivers.secrets import backend_name_for, get_secret_driver
from occ.drivers.secrets.database import DatabaseSecretDriver
from occ.ids import IdPrefix, new_id


def test_configured_driver_is_the_database_driver(settings):
    settings.OCC_SECRET_DRIVER = "database"
    driver = get_secret_driver()
    assert isinstance(driver, DatabaseSecretDriver)
    assert driver.driver_id == "database"


def test_driver_can_be_chosen_by_the_id_stored_on_a_secret(settings):
    settings.OCC_SECRET_DRIVER = "kubernetes"
    assert isinstance(get_secret_driver("database"), DatabaseSecretDriver)


@pytest.mark.parametrize("name", [pytest.param("vault", id="unknown"), pytest.param("", id="empty"),
                                  pytest.param("Database", id="case")])
def test_unknown_driver_fails_clearly(settings, name):
    settings.OCC_SECRET_DRIVER = name
    with pytest.raises(ImproperlyConfigured, match="OCC_SECRET_DRIVER must be one of database, kubernetes"):
        get_secret_driver()


def test_backend_names_are_deterministic_and_dns_safe():
    secret_id = new_id(IdPrefix.SECRET)
    name = backend_name_for(secret_id)
    assert name == backend_name_for(secret_id)
    assert name == "occ-sec-" + secret_id.removeprefix("sec_")
    assert name != backend_name_for(new_id(IdPrefix.SECRET))
    assert len(name) <= 63
    assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", name)


@pytest.mark.parametrize("bad", [pytest.param("agt_00000000-0000-4000-8000-000000000000", id="other-prefix"),
                                 pytest.param("../etc/passwd", id="path"), pytest.param("", id="empty")])
def test_backend_names_derive_only_from_secret_ids(bad):
    with pytest.raises(ValueError, match="Secret ids only"):
        backend_name_for(bad)
