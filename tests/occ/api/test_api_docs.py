"""``/api/docs``: the API reference, Swagger UI over ``/api/openapi.json``, from this server's
own static files (no CDN) and within the console's Content-Security-Policy."""

from __future__ import annotations

import json
import re

from django.contrib.staticfiles import finders
from django.test import Client


def test_the_reference_renders_the_served_openapi_document_from_local_files(db):
    response = Client().get("/api/docs")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/html")
    html = response.content.decode()
    settings = json.loads(re.search(r'<script type="application/json" id="swagger-settings">(.*?)</script>',
                                    html, re.S).group(1))
    assert settings["url"] == "/api/openapi.json"
    assert settings["validatorUrl"] is None  # no call to the online validator
    assert Client().get(settings["url"]).status_code == 200
    sources = re.findall(r'<(?:script|link)[^>]+(?:src|href)="([^"]+)"', html)
    assert any(s.endswith("swagger-ui-bundle.js") for s in sources)
    for source in sources:
        assert source.startswith("/"), f"{source} is not served by OCC"
        if source.startswith("/static/"):
            assert finders.find(source.removeprefix("/static/")), f"{source} is not a static file here"


def test_the_reference_page_runs_no_inline_script_or_style(db):
    response = Client().get("/api/docs")
    csp = response["Content-Security-Policy"]
    assert "script-src 'self'" in csp
    assert "unsafe-inline" not in csp
    html = response.content.decode()
    scripts = re.findall(r"<script([^>]*)>(.*?)</script>", html, re.S)
    inline = [body for attrs, body in scripts if "src=" not in attrs and 'type="application/json"' not in attrs]
    assert inline == []
    assert "<style" not in html
    assert " style=" not in html



def test_the_document_declares_the_x_api_key_header_scheme_on_protected_operations(db):
    """Swagger UI shows Authorize only for a declared scheme; anonymous routes declare none."""
    document = Client().get("/api/openapi.json").json()
    schemes = document["components"]["securitySchemes"]
    assert schemes == {"ApiKeyAuth": {"type": "apiKey", "in": "header", "name": "x-api-key"}}
    operations = {(method, path): operation for path, item in document["paths"].items()
                  for method, operation in item.items()}
    anonymous = {key for key, operation in operations.items() if "security" not in operation}
    assert anonymous == {("get", "/api/auth/session")}
    assert {str(operation["security"]) for key, operation in operations.items() if key not in anonymous} == {
        str([{"ApiKeyAuth": []}])}
