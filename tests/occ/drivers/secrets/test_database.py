from __future__ import annotations

import base64

import pytest
from cryptography.fernet import Fernet
from django.core.exceptions import ImproperlyConfigured

from occ.drivers.secrets import SecretDriverError, SecretValueMissing
from occ.drivers.secrets.database import DatabaseSecretDriver
from occ.drivers.secrets.models import EncryptedSecretValue

pytestmark = pytest.mark.django_db

PLAINTEXT = "plaintext-marker-7f3c0a"


def read(driver: DatabaseSecretDriver, name: str) -> str:
    return driver.with_value(name, lambda value: value)


def ciphertext(name: str) -> str:
    return EncryptedSecretValue.objects.get(backend_name=name).ciphertext


@pytest.fixture
def keys() -> tuple[str, str]:
    return Fernet.generate_key().decode(), Fernet.generate_key().decode()


def test_put_stores_ciphertext_that_does_not_contain_the_plaintext(keys):
    driver = DatabaseSecretDriver([keys[0]])
    driver.put("occ-sec-a", PLAINTEXT)
    stored = ciphertext("occ-sec-a")
    assert PLAINTEXT not in stored
    assert PLAINTEXT.encode() not in base64.urlsafe_b64decode(stored)
    assert Fernet(keys[0]).decrypt(stored.encode()) == PLAINTEXT.encode()
    assert read(driver, "occ-sec-a") == PLAINTEXT


def test_put_replaces_the_value_in_place(keys):
    driver = DatabaseSecretDriver([keys[0]])
    driver.put("occ-sec-a", "first")
    driver.put("occ-sec-a", "second ✓")
    assert EncryptedSecretValue.objects.count() == 1
    assert read(driver, "occ-sec-a") == "second ✓"


def test_with_value_returns_what_the_consumer_returns(keys):
    driver = DatabaseSecretDriver([keys[0]])
    driver.put("occ-sec-a", "abc")
    assert driver.with_value("occ-sec-a", len) == 3


def test_delete_is_idempotent(keys):
    driver = DatabaseSecretDriver([keys[0]])
    driver.put("occ-sec-a", "abc")
    driver.put("occ-sec-b", "keep")
    driver.delete("occ-sec-a")
    driver.delete("occ-sec-a")
    driver.delete("occ-sec-never-existed")
    assert list(EncryptedSecretValue.objects.values_list("backend_name", flat=True)) == ["occ-sec-b"]
    with pytest.raises(SecretValueMissing):
        read(driver, "occ-sec-a")


def test_missing_value_raises_without_calling_the_consumer(keys):
    calls = []
    with pytest.raises(SecretValueMissing):
        DatabaseSecretDriver([keys[0]]).with_value("occ-sec-missing", calls.append)
    assert calls == []


def test_old_key_still_decrypts_and_new_values_use_the_newest_key(keys):
    old, new = keys
    DatabaseSecretDriver([old]).put("occ-sec-old", "from before")
    rotated = DatabaseSecretDriver([new, old])
    assert read(rotated, "occ-sec-old") == "from before"
    rotated.put("occ-sec-new", "after")
    Fernet(new).decrypt(ciphertext("occ-sec-new").encode())  # raises if not under the newest key


def test_rotate_moves_every_row_to_the_newest_key(keys):
    old, new = keys
    DatabaseSecretDriver([old]).put("occ-sec-a", "alpha")
    DatabaseSecretDriver([old]).put("occ-sec-b", "beta")
    DatabaseSecretDriver([new]).put("occ-sec-c", "gamma")
    before_c = ciphertext("occ-sec-c")

    result = DatabaseSecretDriver([new, old]).rotate(batch_size=1)

    assert (result.rotated, result.already_current, result.undecryptable) == (2, 1, [])
    assert ciphertext("occ-sec-c") == before_c
    only_new = DatabaseSecretDriver([new])
    assert [read(only_new, n) for n in ("occ-sec-a", "occ-sec-b", "occ-sec-c")] == ["alpha", "beta", "gamma"]
    with pytest.raises(SecretDriverError):
        read(DatabaseSecretDriver([old]), "occ-sec-a")
    again = DatabaseSecretDriver([new, old]).rotate()
    assert (again.rotated, again.already_current) == (0, 3)


def test_rotate_reports_rows_no_key_opens_and_keeps_them(keys):
    old, new = keys
    stranger = Fernet.generate_key().decode()
    DatabaseSecretDriver([stranger]).put("occ-sec-lost", "unknown key")
    DatabaseSecretDriver([old]).put("occ-sec-a", "alpha")
    lost_before = ciphertext("occ-sec-lost")

    result = DatabaseSecretDriver([new, old]).rotate()

    assert (result.rotated, result.undecryptable) == (1, ["occ-sec-lost"])
    assert ciphertext("occ-sec-lost") == lost_before


def test_value_under_an_unknown_key_is_a_clear_driver_error(keys):
    DatabaseSecretDriver([keys[0]]).put("occ-sec-a", PLAINTEXT)
    with pytest.raises(SecretDriverError) as caught:
        read(DatabaseSecretDriver([keys[1]]), "occ-sec-a")
    assert caught.value.status == 503
    assert "decrypted" in caught.value.message
    assert PLAINTEXT not in caught.value.message


def test_keys_default_to_the_setting(settings, keys):
    settings.OCC_SECRET_KEYS = [keys[1], keys[0]]
    DatabaseSecretDriver().put("occ-sec-a", "x")
    Fernet(keys[1]).decrypt(ciphertext("occ-sec-a").encode())


@pytest.mark.parametrize("bad_keys", [pytest.param([], id="none"), pytest.param(["not-a-key"], id="malformed")])
def test_bad_key_configuration_fails_clearly(bad_keys):
    with pytest.raises(ImproperlyConfigured, match="OCC_SECRET_KEYS"):
        DatabaseSecretDriver(bad_keys)


def test_bad_key_message_does_not_echo_the_key(keys):
    with pytest.raises(ImproperlyConfigured) as caught:
        DatabaseSecretDriver([keys[0], "almost-a-key-but-secret"])
    assert "almost-a-key-but-secret" not in str(caught.value)
    assert "entry 2" in str(caught.value)


def test_rotate_command_reencrypts_and_reports(keys, settings):
    from io import StringIO

    from django.core.management import CommandError, call_command

    old, new = keys
    DatabaseSecretDriver([old]).put("occ-sec-a", "alpha")
    settings.OCC_SECRET_KEYS = [new, old]
    out = StringIO()
    call_command("occ_rotate_secret_keys", stdout=out)
    assert "re-encrypted 1 value(s); 0 already current" in out.getvalue()
    assert read(DatabaseSecretDriver([new]), "occ-sec-a") == "alpha"

    DatabaseSecretDriver([Fernet.generate_key().decode()]).put("occ-sec-lost", "x")
    with pytest.raises(CommandError, match=r"1 value\(s\) could not be decrypted.*occ-sec-lost"):
        call_command("occ_rotate_secret_keys", stdout=StringIO())
