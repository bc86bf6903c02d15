"""The harness OCC pins in the rendered config (``render._pin_embedded_harness``): a built-in
provider whose models the runtime would otherwise run on a harness plugin it installs from the
npm registry at start (openai -> codex) runs on the runtime's embedded harness, unless the
document names one. Found by the real gateway Pod (no way out of it): with ``openai/gpt-5`` it
exited 78 ("gateway requires state migration") after the install failed."""

from __future__ import annotations

import pytest

from occ.openclaw import render
from occ.openclaw.schema import schema_problems


def rendered(document: dict, *, cluster: bool = False) -> dict:
    if cluster:
        return render.render_cluster_config(document, port=8080, trusted_proxy_cidrs=["10.0.0.0/8"],
                                            password_env="OPENCLAW_GATEWAY_PASSWORD", workspace="/w",
                                            deliver_model_key=True)
    return render.render_runtime_config(document, port=19000, password_env="OPENCLAW_GATEWAY_PASSWORD",
                                        workspace="/w", log_file="/l", deliver_model_key=True)


def harness(config: dict, ref: str) -> object:
    return config["agents"]["defaults"].get("models", {}).get(ref, {}).get("agentRuntime")


@pytest.mark.parametrize("cluster", [False, True], ids=["local", "cluster"])
def test_openai_models_run_on_the_embedded_harness(cluster):
    document = {"agents": {"defaults": {"model": {"primary": "openai/gpt-5",
                                                  "fallbacks": ["openai/gpt-5-mini", "anthropic/claude-x"]}}}}
    config = rendered(document, cluster=cluster)
    assert harness(config, "openai/gpt-5") == {"id": "openclaw"}
    assert harness(config, "openai/gpt-5-mini") == {"id": "openclaw"}
    assert harness(config, "anthropic/claude-x") is None  # no harness plugin behind it: left alone
    assert "models" not in document["agents"]["defaults"]  # the document itself is not changed
    assert schema_problems(config) == []


def test_a_model_given_as_a_string_is_pinned_and_a_harness_the_document_names_is_kept():
    assert harness(rendered({"agents": {"defaults": {"model": "openai/gpt-5"}}}), "openai/gpt-5") == {"id": "openclaw"}
    chosen = {"agents": {"defaults": {"model": {"primary": "openai/gpt-5"},
                                      "models": {"openai/gpt-5": {"agentRuntime": {"id": "codex"}, "alias": "g"}}}}}
    config = rendered(chosen)
    assert harness(config, "openai/gpt-5") == {"id": "codex"}
    assert config["agents"]["defaults"]["models"]["openai/gpt-5"]["alias"] == "g"


def test_other_providers_and_unnamed_models_get_no_harness_entry():
    assert "models" not in rendered({"agents": {"defaults": {"model": {"primary": "compatible/llama"}}}})[
        "agents"]["defaults"]
    assert "models" not in rendered({})["agents"]["defaults"]
