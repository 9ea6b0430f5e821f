"""The deployment files are valid against their schemas, checked offline (no cluster,
no Docker engine here): Kubernetes manifests with the schemas bundled in
`kubernetes-validate` (strict: unknown fields fail), the compose file with the
compose-spec schema vendored in `check-jsonschema`. Plus the few cross-file facts
that keep the pieces pointing at each other (ports, probes, durability settings).
"""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from battleline_engine.auth import GATEWAY_CLIENT, GATEWAY_SECRET

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
ENVOY = DEPLOY / "edge" / "envoy.yaml"  # compose mounts it; Kubernetes makes it a ConfigMap
# Every manifest of the base: its own files and the edge (Envoy) it takes in.
K8S_FILES = sorted([*(DEPLOY / "k8s" / "base").glob("*.yaml"), DEPLOY / "edge" / "edge.yaml"])
OVERLAYS = sorted(p.parent for p in (DEPLOY / "k8s" / "overlays").glob("*/kustomization.yaml"))
# The oldest release we promise (gRPC probes are GA from 1.27) and the newest bundled.
K8S_VERSIONS = ("1.27.0", kubernetes_validate.utils.latest_version())


def _docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def _resources() -> list[dict[str, Any]]:
    """Every API object of deploy/k8s/base (the Kustomization is a build file, not one)."""
    return [d for f in K8S_FILES for d in _docs(f) if d["kind"] != "Kustomization"]


def _by_kind(kind: str, name: str) -> dict[str, Any]:
    return next(d for d in _resources() if d["kind"] == kind and d["metadata"]["name"] == name)


def _compose() -> dict[str, Any]:
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text())  # type: ignore[no-any-return]


def _envoy() -> dict[str, Any]:
    return yaml.safe_load(ENVOY.read_text())  # type: ignore[no-any-return]


def _listener(name: str) -> dict[str, Any]:
    """The Envoy listener called `name`."""
    return next(x for x in _envoy()["static_resources"]["listeners"] if x["name"] == name)


def _connection_manager(listener: dict[str, Any]) -> dict[str, Any]:
    """The typed_config of a listener's HTTP connection manager (its one filter chain)."""
    (chain,) = listener["filter_chains"]
    return next(f["typed_config"] for f in chain["filters"]
                if f["name"] == "envoy.filters.network.http_connection_manager")


def _compose_schema() -> dict[str, Any]:
    vendor = resources.files("check_jsonschema") / "builtin_schemas" / "vendor"
    return json.loads((vendor / "compose-spec.json").read_text())  # type: ignore[no-any-return]


def _compose_errors(doc: dict[str, Any]) -> list[str]:
    schema = _compose_schema()
    validator = jsonschema.validators.validator_for(schema)(schema)
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(doc)]


@pytest.mark.parametrize("version", K8S_VERSIONS)
def test_kubernetes_manifests_match_the_schemas(version: str) -> None:
    objects = _resources()
    kinds = {d["kind"] for d in objects}
    assert {"Deployment", "Service", "HorizontalPodAutoscaler", "PodDisruptionBudget",
            "ConfigMap", "StatefulSet"} <= kinds
    for doc in objects:
        kubernetes_validate.validate(doc, version, strict=True)


@pytest.mark.parametrize("overlay", OVERLAYS, ids=lambda p: p.name)
def test_overlays_build_to_valid_manifests(overlay: Path) -> None:
    """Each overlay names files that exist, builds (kubectl kustomize, offline) and
    validates like the base. kubectl is required, not optional: a skipped build would let
    a broken overlay through CI (scripts/install_test_tools.sh installs it when missing)."""
    kustomization = yaml.safe_load((overlay / "kustomization.yaml").read_text())
    for entry in kustomization["resources"]:
        assert (overlay / entry).exists(), entry
    kubectl = shutil.which("kubectl")
    assert kubectl is not None, "kubectl not found: run `sh scripts/install_test_tools.sh`"
    built = subprocess.run([kubectl, "kustomize", str(overlay)], check=True,
                           capture_output=True, text=True, timeout=60).stdout
    objects = [d for d in yaml.safe_load_all(built) if d]
    assert {d["kind"] for d in objects} >= {"Deployment", "Service", "ConfigMap"}
    for doc in objects:
        kubernetes_validate.validate(doc, K8S_VERSIONS[-1], strict=True)


def test_kubernetes_validation_catches_a_mistake() -> None:
    """The check is not vacuous: a misspelt field fails strict validation."""
    broken = copy.deepcopy(_by_kind("Deployment", "battleline-engine"))
    probe = broken["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]
    probe["grpc"]["prot"] = probe["grpc"].pop("port")
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, K8S_VERSIONS[-1], strict=True)


def test_compose_file_matches_the_compose_spec() -> None:
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    assert _compose_errors(compose) == []
    broken = copy.deepcopy(compose)
    broken["services"]["engine"]["replica"] = 2
    assert _compose_errors(broken), "a misspelt key must fail"


def test_engine_probes_use_grpc_health_on_the_grpc_port() -> None:
    engine = _by_kind("Deployment", "battleline-engine")
    container = engine["spec"]["template"]["spec"]["containers"][0]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    for probe in ("readinessProbe", "livenessProbe"):
        assert container[probe]["grpc"]["port"] == ports["grpc"]
    assert _by_kind("Service", "battleline-engine-headless")["spec"]["clusterIP"] == "None"
    hpa = _by_kind("HorizontalPodAutoscaler", "battleline-engine")
    assert hpa["spec"]["scaleTargetRef"]["name"] == "battleline-engine"
    pdb = _by_kind("PodDisruptionBudget", "battleline-engine")
    assert pdb["spec"]["selector"]["matchLabels"] == engine["spec"]["selector"]["matchLabels"]


def test_redis_is_append_only_with_fsync_always_everywhere() -> None:
    """compose mounts deploy/redis.conf where its start script reads it (the script adds
    the password and starts redis-server on the copy); Kubernetes has the same lines."""
    redis = _compose()["services"]["redis"]
    assert "./redis.conf:/etc/redis/redis.conf:ro" in redis["volumes"]
    script = redis["command"][-1]
    assert "cat /etc/redis/redis.conf" in script
    assert "exec docker-entrypoint.sh redis-server /run/redis/redis.conf" in script
    for conf in ((DEPLOY / "redis.conf").read_text(),
                 _by_kind("ConfigMap", "redis-config")["data"]["redis.conf"]):
        lines = conf.splitlines()
        assert "appendonly yes" in lines and "appendfsync always" in lines


def test_compose_has_two_engines_ai_workers_and_envoy() -> None:
    services = yaml.safe_load((DEPLOY / "compose.yaml").read_text())["services"]
    assert services["engine"]["deploy"]["replicas"] == 2
    assert services["ai"]["command"][:2] == ["ai", "--engine"]
    assert "envoy" in services


def test_envoy_balances_grpc_calls_over_http2_with_health_checks() -> None:
    envoy = _envoy()
    (cluster,) = envoy["static_resources"]["clusters"]
    assert cluster["lb_policy"] == "ROUND_ROBIN"
    options = cluster["typed_extension_protocol_options"][
        "envoy.extensions.upstreams.http.v3.HttpProtocolOptions"]
    assert "http2_protocol_options" in options["explicit_http_config"]
    assert "grpc_health_check" in cluster["health_checks"][0]
    address = cluster["load_assignment"]["endpoints"][0]["lb_endpoints"][0]["endpoint"]
    # One name for every engine in both deployments: compose's alias, Kubernetes's
    # headless Service (where Envoy runs in the engines' namespace).
    name = "battleline-engine-headless"
    assert address["address"]["socket_address"] == {"address": name, "port_value": 50051}
    assert name in _compose()["services"]["engine"]["networks"]["default"]["aliases"]
    assert _by_kind("Service", name)["spec"]["clusterIP"] == "None"


def test_dockerfile_is_slim_non_root_and_runs_battleline() -> None:
    text = (DEPLOY / "Dockerfile").read_text()
    assert "FROM python:3.11-slim" in text
    assert "USER 10001" in text
    assert 'ENTRYPOINT ["battleline"]' in text and 'CMD ["serve"]' in text


def test_the_web_front_runs_apart_from_the_engines_everywhere() -> None:
    """Engines serve no page (`--no-web`); a `battleline web` deployment bridges browsers
    to the engine service, probed over HTTP on the port its Service targets."""
    engine = _by_kind("Deployment", "battleline-engine")["spec"]["template"]["spec"]
    assert "--no-web" in engine["containers"][0]["args"]
    web = _by_kind("Deployment", "battleline-web")["spec"]["template"]["spec"]["containers"][0]
    args = web["args"]
    assert args[0] == "web" and args[args.index("--engine") + 1] == "battleline-engine:50051"
    port = {p["name"]: p["containerPort"] for p in web["ports"]}["http"]
    assert str(port) == args[args.index("--port") + 1]
    assert web["readinessProbe"]["httpGet"]["port"] == "http"
    assert _by_kind("Service", "battleline-web")["spec"]["ports"][0]["targetPort"] == "http"
    services = _compose()["services"]
    assert "--no-web" in services["engine"]["command"]
    internal = _listener("grpc_internal")["address"]["socket_address"]["port_value"]
    assert services["web"]["command"][:3] == ["web", "--engine", f"envoy:{internal}"]


def test_the_ai_key_is_one_secret_and_no_secret_is_an_argument() -> None:
    """The hosted AI's key is a Secret read by the engines and the AI alike (takeovers
    across pods and restarts need the same key everywhere), and no container gets a
    secret on its command line (world-readable in /proc): the Redis URL and the key come
    from the environment."""
    for name in ("battleline-engine", "battleline-ai"):
        container = _by_kind("Deployment", name)["spec"]["template"]["spec"]["containers"][0]
        refs = {e["secretRef"]["name"] for e in container["envFrom"] if "secretRef" in e}
        assert {"battleline-ai", "battleline-redis"} <= refs, name
    for doc in _resources():
        if doc["kind"] not in ("Deployment", "StatefulSet"):
            continue
        for container in doc["spec"]["template"]["spec"]["containers"]:
            words = " ".join(container.get("args", []) + container.get("command", []))
            assert "REDIS_URL" not in words and "redis://" not in words, words
            assert "AI_KEY" not in words and "--requirepass" not in words, words
    services = yaml.safe_load((DEPLOY / "compose.yaml").read_text())["services"]
    for name in ("engine", "ai"):
        assert "BATTLELINE_AI_KEY" in services[name]["environment"], name
        assert not any("redis://" in word for word in services[name]["command"]), name


def test_client_addresses_are_believed_from_envoy_and_the_gateway_by_their_secret_only() -> None:
    """The engines count a client under the address the web gateway or Envoy names with
    the gateway secret, shared by environment (issue #14). Until the twenty-eighth
    session they also believed x-forwarded-for from Envoy's network position (compose's
    fixed address, Kubernetes' whole pod network), which rested on nothing else reaching
    the engines; no engine believes any proxy now."""
    services = yaml.safe_load((DEPLOY / "compose.yaml").read_text())["services"]
    assert "--trusted-proxy" not in services["engine"]["command"]
    for name in ("engine", "web", "envoy"):
        assert "BATTLELINE_GATEWAY_SECRET" in services[name]["environment"], name
        assert "BATTLELINE_GATEWAY_SECRET" not in " ".join(services[name]["command"]), name
    for name in ("battleline-engine", "battleline-web", "battleline-edge"):
        container = _by_kind("Deployment", name)["spec"]["template"]["spec"]["containers"][0]
        assert {"secretRef": {"name": "battleline-gateway"}} in container["envFrom"], name
        names = {e["name"] for e in container.get("env", [])}
        assert "BATTLELINE_TRUSTED_PROXY" not in names, name
    assert "BATTLELINE_TRUSTED_PROXY" not in _by_kind("ConfigMap", "battleline-config")["data"]
    (clients, internal) = _envoy()["static_resources"]["listeners"]
    assert (clients["name"], internal["name"]) == ("grpc", "grpc_internal")
    (host,) = _connection_manager(clients)["route_config"]["virtual_hosts"]
    added = {h["header"]["key"]: (h["header"]["value"], h["append_action"])
             for h in host["request_headers_to_add"]}
    assert added == {
        GATEWAY_SECRET: ("%ENVIRONMENT(BATTLELINE_GATEWAY_SECRET)%", "OVERWRITE_IF_EXISTS_OR_ADD"),
        GATEWAY_CLIENT: ("%DOWNSTREAM_REMOTE_ADDRESS_WITHOUT_PORT%", "OVERWRITE_IF_EXISTS_OR_ADD"),
    }
    assert {GATEWAY_SECRET, GATEWAY_CLIENT} <= set(host["request_headers_to_remove"])
    # The internal listener passes the web gateway's own headers and adds none.
    (inner,) = _connection_manager(internal)["route_config"]["virtual_hosts"]
    assert "request_headers_to_add" not in inner and "request_headers_to_remove" not in inner


def test_every_battleline_process_gets_the_same_log_settings() -> None:
    """Engines, AI workers and web gateways log at the level and in the format the
    deployment sets once (the production overlay lowers the level for all of them), so one
    collector parses every pod's lines; the web gateway once got neither."""
    config = _by_kind("ConfigMap", "battleline-config")["data"]
    assert config["BATTLELINE_LOG_FORMAT"] == "json"
    for name in ("battleline-engine", "battleline-ai", "battleline-web"):
        container = _by_kind("Deployment", name)["spec"]["template"]["spec"]["containers"][0]
        refs = {e["configMapRef"]["name"] for e in container["envFrom"] if "configMapRef" in e}
        assert "battleline-config" in refs, name
    services = yaml.safe_load((DEPLOY / "compose.yaml").read_text())["services"]
    for name in ("engine", "ai", "web"):
        environment = services[name]["environment"]
        assert environment["BATTLELINE_LOG_FORMAT"] == "json", name
        assert "BATTLELINE_LOG_LEVEL" in environment, name


def test_the_engines_reach_the_ai_service_for_hints_and_reviews() -> None:
    """AI seats, players' hints and post-game reviews are the AI pods' work: the engines
    start no AI of their own (`--no-ai`; each engine pod once ran an AI worker and search
    beside the engine, under the engine's memory limit), and their BATTLELINE_AI_ADDRESS
    names the AI's Service and port, which targets the port the AI container listens on
    (on every interface) and probes. Compose the same."""
    engine = _by_kind("Deployment", "battleline-engine")["spec"]["template"]["spec"]
    assert "--no-ai" in engine["containers"][0]["args"]
    config = _by_kind("ConfigMap", "battleline-config")["data"]
    host, port = config["BATTLELINE_AI_ADDRESS"].rsplit(":", 1)
    service = _by_kind("Service", host)
    assert [p["port"] for p in service["spec"]["ports"]] == [int(port)]
    container = _by_kind("Deployment", host)["spec"]["template"]["spec"]["containers"][0]
    args = container["args"]
    assert args[args.index("--port") + 1] == port and args[args.index("--host") + 1] == "0.0.0.0"
    named = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert named[service["spec"]["ports"][0]["targetPort"]] == int(port)
    assert container["readinessProbe"]["grpc"]["port"] == int(port)
    services = yaml.safe_load((DEPLOY / "compose.yaml").read_text())["services"]
    assert "--no-ai" in services["engine"]["command"]
    host, port = services["engine"]["environment"]["BATTLELINE_AI_ADDRESS"].split(":")
    command = services[host]["command"]
    assert command[command.index("--port") + 1] == port and port in services[host]["expose"]


def test_only_the_engines_and_the_ai_reach_redis() -> None:
    """Redis holds every hidden card: a NetworkPolicy admits the engines and the AI
    workers on its port, and no one else (the web front included)."""
    policy = _by_kind("NetworkPolicy", "redis-from-engines-and-ai-only")["spec"]
    assert policy["podSelector"]["matchLabels"] == {"app.kubernetes.io/name": "redis"}
    (rule,) = policy["ingress"]
    (source,) = rule["from"]
    (allowed,) = source["podSelector"]["matchExpressions"]
    assert set(allowed["values"]) == {"battleline-engine", "battleline-ai"}
    assert [p["port"] for p in rule["ports"]] == [6379]
    labels = {_by_kind("Deployment", name)["spec"]["template"]["metadata"]["labels"][
        "app.kubernetes.io/name"] for name in ("battleline-engine", "battleline-ai")}
    assert labels == {"battleline-engine", "battleline-ai"}
