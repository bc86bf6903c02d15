"""``/metrics``: the bearer token guards it, the fleet's figures are read from the database, and
under gunicorn the web tier's counters are summed over every worker process.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import httpx
import pytest
from django.test import Client
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from occ.models import ControllerWork, UsageDay
from tests.factories import AgentFactory, NamespaceFactory
from tests.processes import group_running
from tests.test_gunicorn_errors import free_port, web_command

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "metrics-token-for-the-test"


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(text) for sample in family.samples}


def test_off_without_a_token(db, settings):
    settings.OCC_METRICS_TOKEN = ""
    assert Client().get("/metrics", HTTP_AUTHORIZATION="Bearer ").status_code == 404


@pytest.mark.parametrize("authorization", [None, "Bearer wrong", f"Basic {TOKEN}", f"Bearer {TOKEN}x"])
def test_a_scraper_without_the_token_is_refused(db, settings, authorization):
    settings.OCC_METRICS_TOKEN = TOKEN
    headers = {"HTTP_AUTHORIZATION": authorization} if authorization else {}
    response = Client().get("/metrics", **headers)
    assert response.status_code == 401
    assert b"occ_" not in response.content


def work(key: str, *, namespace, state: str, took: float | None = None, code: str | None = None) -> None:
    now = timezone.now()
    created = now - timedelta(seconds=took or 0)
    ControllerWork.objects.create(
        idempotency_key=key, job="revision", namespace=namespace, agent_id="agt_m", revision_id=f"rev_{key}",
        actor_id="prn_m", state=state, available_at=created, created_at=created, updated_at=now,
        completed_at=now if state == "succeeded" else None, last_attempt_code=code)


def test_the_fleet_as_the_database_holds_it(db, settings):
    settings.OCC_METRICS_TOKEN = TOKEN
    namespace = NamespaceFactory()
    AgentFactory.create_batch(2, namespace=namespace, desired_runtime_state="running")
    AgentFactory(namespace=namespace)
    for index, took in enumerate((3.0, 20.0, 200.0)):
        work(f"w{index}", namespace=namespace, state="succeeded", took=took)
    work("queued", namespace=namespace, state="queued", took=90.0, code="LEASE_EXPIRED")
    response = Client().get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain")
    got = samples(response.content.decode())
    assert got[("occ_agents", (("desired", "running"), ("status", "active")))] == 2
    assert got[("occ_agents", (("desired", "stopped"), ("status", "active")))] == 1
    assert got[("occ_work", (("job", "revision"), ("state", "succeeded")))] == 3
    assert got[("occ_work", (("job", "revision"), ("state", "queued")))] == 1
    assert 89 <= got[("occ_work_oldest_pending_seconds", (("job", "revision"),))] < 600
    assert got[("occ_work_lease_expired", (("job", "revision"),))] == 1
    assert got[("occ_deploy_duration_seconds_bucket", (("le", "5.0"),))] == 1
    assert got[("occ_deploy_duration_seconds_bucket", (("le", "30.0"),))] == 2
    assert got[("occ_deploy_duration_seconds_bucket", (("le", "300.0"),))] == 3
    assert got[("occ_deploy_duration_seconds_count", ())] == 3
    assert 222 <= got[("occ_deploy_duration_seconds_sum", ())] < 240
    # Bounded labels: nothing names an Agent or a person (usage, per Namespace name, has none here).
    text = response.content.decode()
    assert namespace.id not in text
    assert "agt_" not in text


def test_usage_and_cost_per_namespace_name_and_never_per_agent(db, settings):
    settings.OCC_METRICS_TOKEN = TOKEN
    namespace = NamespaceFactory(name="team-a")
    spender = AgentFactory(namespace=namespace)
    today = timezone.now().date()
    for day, model, cost in ((today, "gpt-5", "1.25"), (today, "gpt-5-mini", "0.25"),
                             (today - timedelta(days=40), "gpt-5", "9")):
        UsageDay.objects.create(namespace_id=namespace.id, agent_id=spender.id, agent_name=spender.name, day=day,
                                provider="openai", model=model, input_tokens=100, output_tokens=10,
                                cache_read_tokens=5, cost=Decimal(cost), collected_at=timezone.now())
    text = Client().get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").content.decode()
    got = samples(text)
    assert got[("occ_usage_cost_usd", (("namespace", "team-a"), ("period", "day")))] == 1.5
    assert got[("occ_usage_cost_usd", (("namespace", "team-a"), ("period", "month")))] == 1.5  # 40 days ago: not
    assert got[("occ_usage_tokens", (("kind", "input"), ("namespace", "team-a")))] == 200
    assert got[("occ_usage_tokens", (("kind", "cached"), ("namespace", "team-a")))] == 10
    assert spender.id not in text
    assert "gpt-5" not in text


def test_refused_sign_ins_are_counted(db, settings):
    settings.OCC_METRICS_TOKEN = TOKEN
    client = Client()

    def failures() -> float:
        got = samples(client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").content.decode())
        return got.get(("occ_sign_in_failures_total", ()), 0.0)

    before = failures()
    client.post("/console/sign-in", {"username": "nobody", "password": "wrong-password-1"})
    assert failures() == before + 1


@pytest.fixture(scope="module")
def web(tmp_path_factory) -> Iterator[tuple[int, Path]]:
    """The Procfile's gunicorn (two worker processes) on a migrated SQLite data directory."""
    data_dir = tmp_path_factory.mktemp("occ-data")
    metrics_dir = tmp_path_factory.mktemp("metrics")
    port = free_port()
    env = {**os.environ, "OCC_DATA_DIR": str(data_dir), "OCC_PORT": str(port), "OCC_WEB_WORKERS": "2",
           "OCC_METRICS_TOKEN": TOKEN, "PROMETHEUS_MULTIPROC_DIR": str(metrics_dir),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    for name in ("DATABASE_URL", "CELERY_BROKER_URL", "OCC_TEST_DATABASE_NAME"):
        env.pop(name, None)
    for argv in ([sys.executable, "-m", "project.data_dir"], [sys.executable, "manage.py", "migrate", "-v0"]):
        subprocess.run(argv, env=env, cwd=ROOT, check=True, capture_output=True)
    log = data_dir / "web.log"
    with log.open("wb") as out:
        process = subprocess.Popen(["bash", "-c", web_command()], env=env, cwd=ROOT, stdout=out,
                                   stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5).status_code == 200:
                    break
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"gunicorn did not answer /healthz:\n{log.read_text(errors='replace')[-3000:]}")
            time.sleep(0.3)
        yield port, metrics_dir
    finally:
        if group_running(process.pid):
            os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=60)


@pytest.mark.slow
def test_every_worker_process_is_counted(web):
    port, metrics_dir = web

    def health_answers() -> float:
        # A new connection each time, so either worker may answer the scrape.
        response = httpx.get(f"http://127.0.0.1:{port}/metrics", headers={"Authorization": f"Bearer {TOKEN}"},
                             timeout=30)
        assert response.status_code == 200, response.text
        return samples(response.text)[("occ_http_requests_total",
                                       (("face", "health"), ("method", "GET"), ("status", "2xx")))]

    before = health_answers()
    for _ in range(40):
        assert httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=30).status_code == 200
    for _ in range(6):  # whichever process answers, the sum over both is the same
        assert health_answers() == before + 40
    assert list(metrics_dir.glob("counter_*.db")), "the workers count in the multiprocess files"
