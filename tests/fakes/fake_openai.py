"""The loopback fake OpenAI-compatible model server of the tests (a loopback fixture; real HTTP).

It lives in ``devtools/fake_openai.py`` so that ``python manage.py occ_fake_model`` can
serve it to people without internet; the tests import it from here. Run it in-process
(``FakeOpenAI().start()``) or as a script: ``python -m tests.fakes.fake_openai PORT``.
"""

from __future__ import annotations

import sys

from devtools.fake_openai import MODEL_ID, REPLY, FakeOpenAI

__all__ = ["MODEL_ID", "REPLY", "FakeOpenAI"]


if __name__ == "__main__":
    server = FakeOpenAI(port=int(sys.argv[1]) if len(sys.argv) > 1 else 18555)
    print(f"fake OpenAI-compatible server on {server.base_url}", flush=True)
    server.serve_forever()
