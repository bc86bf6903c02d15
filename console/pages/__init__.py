"""Page models: what a console page shows, read once per request, and how it is put together.

A view (``console.views``) parses the request, calls one service or selector and answers with a
page or one of its partials; what the page reads and the context its template renders belong
here, so that several views of one page (the Agent page's header, tabs and writes) share them
without importing each other. Page models import forms, never views (pyproject.toml, contract
``console-rooms``).
"""
