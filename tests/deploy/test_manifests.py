"""The deployment files are valid against their schemas, checked offline (no cluster,
no Docker engine here): Kubernetes manifests with the schemas bundled in
`kubernetes-validate` (strict: unknown fields fail), the compose file with the
compose-spec schema vendored in `check-jsonschema`. Plus the few cross-file facts
that keep the pieces pointing at each other (ports, probes, durability settings).
"""

from __future__ import annotations

import copy
import json
import re
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


def _built(overlay: Path) -> list[dict[str, Any]]:
    """Every API object of an overlay, as `kubectl kustomize` builds it (offline)."""
    kubectl = shutil.which("kubectl")
    assert kubectl is not None, "kubectl not found: run `sh scripts/install_test_tools.sh`"
    built = subprocess.run([kubectl, "kustomize", str(overlay)], check=True,
                           capture_output=True, text=True, timeout=60).stdout
    return [d for d in yaml.safe_load_all(built) if d]


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
    objects = _built(overlay)
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
    assert 'ENTRYPOINT ["tini", "--", "battleline"]' in text and 'CMD ["serve"]' in text


def test_the_image_user_and_group_are_the_ones_everything_names() -> None:
    """`useradd --system --user-group` gave the user a group with a system gid (995),
    while `USER 10001:10001`, the chown of /data and the pods' runAsGroup all assume gid
    10001. The group is made with that gid, the user put in it, and every name agrees."""
    text = "\n".join(line for line in (DEPLOY / "Dockerfile").read_text().splitlines()
                     if not line.lstrip().startswith("#"))  # instructions, not comments
    assert "--user-group" not in text
    group = re.search(r"groupadd --system --gid (\d+) battleline", text)
    user = re.search(r"useradd --system --uid (\d+) --gid (\d+) ", text)
    assert group and user, "the runtime user and group are made with fixed ids"
    uid, gid = int(user.group(1)), int(user.group(2))
    assert int(group.group(1)) == gid
    assert re.search(rf"^USER {uid}:{gid}$", text, re.M)
    assert f"chown {uid}:{gid} /data" in text
    for name in ("battleline-engine", "battleline-ai", "battleline-web"):
        context = _by_kind("Deployment", name)["spec"]["template"]["spec"]["securityContext"]
        assert (context["runAsUser"], context["runAsGroup"]) == (uid, gid), name


def test_the_web_front_runs_apart_from_the_engines_everywhere() -> None:
    """Engines serve no page (`--no-web`); a `battleline web` deployment bridges browsers
    to the engine service, probed over HTTP on the port its Service targets."""
    engine = _by_kind("Deployment", "battleline-engine")["spec"]["template"]["spec"]
    assert "--no-web" in engine["containers"][0]["args"]
    web = _by_kind("Deployment", "battleline-web")["spec"]["template"]["spec"]["containers"][0]
    args = web["args"]
    assert args[0] == "web" and args[args.index("--engine") + 1] == "battleline-edge-internal:50061"
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


def _engine_target(objects: list[dict[str, Any]], deployment: str) -> tuple[dict[str, Any], int]:
    """The Service a Deployment's `--engine HOST:PORT` names, and the port."""
    container = next(d for d in objects if d["kind"] == "Deployment"
                     and d["metadata"]["name"] == deployment)["spec"]["template"]["spec"][
        "containers"][0]
    args = container["args"]
    host, port = args[args.index("--engine") + 1].rsplit(":", 1)
    service = next((d for d in objects if d["kind"] == "Service" and d["metadata"]["name"] == host),
                   None)
    assert service is not None, f"{deployment}: --engine {host} names no Service"
    return service, int(port)


@pytest.mark.parametrize("overlay", [None, *OVERLAYS], ids=lambda p: p.name if p else "base")
def test_web_and_ai_reach_the_engines_through_a_per_call_balancer(overlay: Path | None) -> None:
    """The web gateway and the AI workers each keep one HTTP/2 connection. They dialled
    `battleline-engine:50051`, a ClusterIP Service (kube-proxy balances connections), so
    every call of a web pod or AI worker went to one engine. They dial the edge's internal
    listener now (a Service selecting the Envoy pods, on the container port of
    envoy.yaml's `grpc_internal`), which balances each call, as compose's dial
    `envoy:50061`; and no Service with a cluster IP selects the engines, so nothing
    in-cluster is pinned to one of them."""
    objects = _built(overlay) if overlay else _resources()
    edge = next(d for d in objects if d["kind"] == "Deployment"
                and d["metadata"]["name"] == "battleline-edge")["spec"]["template"]
    engine = next(d for d in objects if d["kind"] == "Deployment"
                  and d["metadata"]["name"] == "battleline-engine")["spec"]["template"]
    internal = _listener("grpc_internal")["address"]["socket_address"]["port_value"]
    edge_ports = {p["name"]: p["containerPort"] for p in edge["spec"]["containers"][0]["ports"]}
    for name in ("battleline-web", "battleline-ai"):
        service, port = _engine_target(objects, name)
        spec = service["spec"]
        assert spec["selector"].items() <= edge["metadata"]["labels"].items(), name
        assert spec.get("type", "ClusterIP") == "ClusterIP" and spec.get("clusterIP") != "None"
        (entry,) = [p for p in spec["ports"] if p["port"] == port]
        assert edge_ports[entry["targetPort"]] == internal, name
    for service in (d for d in objects if d["kind"] == "Service"):
        if service["spec"].get("selector", {}).items() <= engine["metadata"]["labels"].items():
            assert service["spec"].get("clusterIP") == "None", service["metadata"]["name"]
    services = _compose()["services"]
    for name in ("web", "ai"):
        command = services[name]["command"]
        assert command[command.index("--engine") + 1] == f"envoy:{internal}", name


@pytest.mark.parametrize("overlay", [None, *OVERLAYS], ids=lambda p: p.name if p else "base")
def test_autoscalers_own_the_counts_and_every_budget_leaves_a_pod(overlay: Path | None) -> None:
    """The production overlay set 4 engines and 3 AI workers as Deployment `replicas`
    while HPAs (min 2 and 1) owned the count, so every `kubectl apply` reset whatever the
    autoscalers had scaled to; and the AI's floor of 1 with `maxUnavailable: 1` let a node
    drain take every AI worker. A Deployment an HPA scales sets no `replicas`; every PDB
    leaves at least one pod at the smallest count and still lets a drain evict one; the
    production floors are what deploy/README.md promises."""
    objects = _built(overlay) if overlay else _resources()
    hpas = {d["spec"]["scaleTargetRef"]["name"]: d["spec"] for d in objects
            if d["kind"] == "HorizontalPodAutoscaler"}
    deployments = {d["metadata"]["name"]: d for d in objects if d["kind"] == "Deployment"}
    assert {"battleline-engine", "battleline-ai"} <= set(hpas)
    for name, hpa in hpas.items():
        assert "replicas" not in deployments[name]["spec"], f"{name}: the HPA owns the count"
        assert 2 <= hpa["minReplicas"] <= hpa["maxReplicas"], name
    budgets = [d for d in objects if d["kind"] == "PodDisruptionBudget"]
    assert {d["metadata"]["name"] for d in budgets} >= {
        "battleline-engine", "battleline-ai", "battleline-edge"}
    for budget in budgets:
        spec = budget["spec"]
        (target,) = [n for n, d in deployments.items()
                     if d["spec"]["selector"]["matchLabels"] == spec["selector"]["matchLabels"]]
        fewest = hpas[target]["minReplicas"] if target in hpas else deployments[target][
            "spec"].get("replicas", 1)
        if "maxUnavailable" in spec:
            down = spec["maxUnavailable"]
            assert isinstance(down, int) and 1 <= down < fewest, budget["metadata"]["name"]
        else:
            up = spec["minAvailable"]
            assert isinstance(up, int) and 1 <= up < fewest, budget["metadata"]["name"]
    if overlay is not None and overlay.name == "production":
        floors = {name: hpas[name]["minReplicas"]
                  for name in ("battleline-engine", "battleline-ai")}
        assert floors == {"battleline-engine": 4, "battleline-ai": 3}
        readme = " ".join((DEPLOY / "README.md").read_text().split())
        assert "at least 4 engines and 3 AI workers" in readme
        assert "`overlays/production`: 4 engines, 3 AI workers" in readme


def test_redis_cluster_reaches_the_engines_and_the_ai_workers() -> None:
    """The production overlay's REDIS_CLUSTER=1 is in the ConfigMap the engines and the AI
    workers both load (`battleline ai` takes REDIS_CLUSTER as `serve` does): an AI worker
    talking to a Redis Cluster with the single-node client would fail on every moved slot."""
    (production,) = [o for o in OVERLAYS if o.name == "production"]
    objects = _built(production)
    config = [d for d in objects if d["kind"] == "ConfigMap" and "REDIS_CLUSTER" in d["data"]]
    assert [d["data"]["REDIS_CLUSTER"] for d in config] == ["1"]
    name = config[0]["metadata"]["name"]
    for deployment in ("battleline-engine", "battleline-ai"):
        container = next(d for d in objects if d["kind"] == "Deployment"
                         and d["metadata"]["name"] == deployment)["spec"]["template"]["spec"][
            "containers"][0]
        refs = {e["configMapRef"]["name"] for e in container["envFrom"] if "configMapRef" in e}
        assert name in refs, deployment
        assert not any(e.get("name") == "REDIS_CLUSTER" for e in container.get("env", []))


def test_both_redis_configs_carry_the_same_settings() -> None:
    """deploy/redis.conf says k8s/base/redis.yaml carries the same settings; the latter
    also had `protected-mode no`. Both start scripts give the default user a password,
    which keeps protected mode from turning anyone away, so neither sets it."""
    def settings(text: str) -> dict[str, str]:
        return dict(line.split(None, 1) for line in text.splitlines()
                    if line.strip() and not line.lstrip().startswith("#"))
    compose = settings((DEPLOY / "redis.conf").read_text())
    k8s = settings(_by_kind("ConfigMap", "redis-config")["data"]["redis.conf"])
    assert compose == k8s
    assert "protected-mode" not in compose

