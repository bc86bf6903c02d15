"""A request for a foreign Host is logged as one line at WARNING, not a traceback at ERROR."""

from __future__ import annotations

import logging


def test_a_foreign_host_logs_one_warning_line(client, caplog):
    with caplog.at_level(logging.INFO):
        response = client.get("/healthz", HTTP_HOST="evil.example")
    assert response.status_code == 400
    records = [r for r in caplog.records if r.name == "django.security.DisallowedHost"]
    assert len(records) == 1
    assert (records[0].levelname, records[0].exc_info) == ("WARNING", None)
    assert "evil.example" in records[0].getMessage()
    assert "Traceback" not in caplog.text
