"""``project.chunked_body``: Django reads a chunked body (decoded by gunicorn) as the body."""

from __future__ import annotations

import io

from django.core.handlers.wsgi import WSGIRequest

from project.chunked_body import reading_chunked_bodies


def seen_by_django(environ: dict) -> bytes:
    bodies = []

    def app(environ, start_response):
        bodies.append(WSGIRequest(environ).body)
        return []

    reading_chunked_bodies(app)({"REQUEST_METHOD": "POST", "PATH_INFO": "/", "wsgi.input_terminated": True,
                                 **environ}, lambda *args: None)
    return bodies[0]


def test_a_chunked_body_reaches_django_with_its_length():
    assert seen_by_django({"HTTP_TRANSFER_ENCODING": "chunked",
                           "wsgi.input": io.BytesIO(b'{"name": "x"}')}) == b'{"name": "x"}'


def test_a_body_with_a_length_is_left_alone():
    assert seen_by_django({"CONTENT_LENGTH": "2", "wsgi.input": io.BytesIO(b"{}tail")}) == b"{}"


def test_without_chunked_framing_there_is_no_body():
    assert seen_by_django({"wsgi.input": io.BytesIO(b"{}")}) == b""
