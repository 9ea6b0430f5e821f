"""The third audit's findings on the deployment files (docs/SECURITY.md, "Open findings
(third audit)", items 2 and 3), checked on the files as written: Envoy's edge limits and
timeouts, Redis's password in compose and Kubernetes, and who may reach what.

No Envoy, Docker engine or cluster runs here: these read the YAML (PyYAML, like
test_manifests.py) and check the settings and the facts they rely on (the engine's
header names, its per-client stream cap, its slowest unary call, the streaming methods
of the protos), so a change on either side that breaks the other fails here.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
import yaml

from battleline_engine.hints import MAX_BUDGET_MS, QUEUE_WAIT_S
from battleline_engine.redis_server import USER_RULES, redis_executable
from battleline_engine.reviews import REVIEW_TIMEOUT_S
from battleline_engine.runtime import EngineConfig
from battleline_engine.server import ServerConfig
from tests.processes import free_port

from .procs import BIN
from .test_manifests import (
    DEPLOY,
    K8S_FILES,
    _by_kind,
    _compose,
    _connection_manager,
    _envoy,
    _listener,
    _resources,
)

ROOT = DEPLOY.parent
README = DEPLOY / "README.md"
TYPES = {  # Envoy extension name -> the @type its typed_config must carry (v3 API)
    "envoy.filters.network.connection_limit":
        "type.googleapis.com/envoy.extensions.filters.network.connection_limit.v3.ConnectionLimit",
    "envoy.filters.network.http_connection_manager":
        "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3."
        "HttpConnectionManager",
    "envoy.filters.http.router":
        "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router",
}
LONG_LIVED_DEFAULTS = ("/grpc.health.v1.Health/Watch",)  # server streams of grpc itself


def _seconds(duration: str) -> float:
    """An Envoy YAML duration ("10s", "0.25s") in seconds."""
    assert re.fullmatch(r"\d+(\.\d+)?s", duration), duration
    return float(duration[:-1])


def _routes(listener: dict[str, Any]) -> list[dict[str, Any]]:
    (host,) = _connection_manager(listener)["route_config"]["virtual_hosts"]
    return host["routes"]  # type: ignore[no-any-return]


def _streaming_paths() -> set[str]:
    """`/package.Service/Method` of every server-streaming method in protos/battleline."""
    paths = set()
    for proto in (ROOT / "protos" / "battleline").rglob("*.proto"):
        text = proto.read_text()
        package = re.search(r"^package\s+([\w.]+);", text, re.M)
        assert package, proto
        for service, body in re.findall(r"service\s+(\w+)\s*\{(.*?)\n\}", text, re.S):
            for method in re.findall(r"rpc\s+(\w+)\s*\([^)]*\)\s*returns\s*\(\s*stream\b",
                                     body):
                paths.add(f"/{package.group(1)}.{service}/{method}")
    return paths


def _networks(service: dict[str, Any]) -> set[str]:
    networks = service.get("networks", ["default"])
    return set(networks)


def _strings(node: Any) -> Iterator[str]:
    """Every string value of a parsed YAML document (comments are not values)."""
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for value in node.values():
            yield from _strings(value)
    elif isinstance(node, list):
        for value in node:
            yield from _strings(value)


def _policy_for(name: str) -> dict[str, Any]:
    """The one NetworkPolicy whose podSelector picks the pods labelled `name`."""
    policies = [d["spec"] for d in _resources() if d["kind"] == "NetworkPolicy"
                and d["spec"]["podSelector"].get("matchLabels") == {"app.kubernetes.io/name": name}]
    assert len(policies) == 1, f"want one NetworkPolicy for {name} pods, found {len(policies)}"
    return policies[0]


# -- Envoy (finding 2) -----------------------------------------------------------------


def test_envoy_admin_listens_on_loopback_only() -> None:
    """Admin (config dump, stats, /quitquitquit) was on 0.0.0.0: any container of the
    network could reach it. It binds the container's loopback now, and compose publishes
    no admin port (a published port could not reach a loopback listener anyway)."""
    admin = _envoy()["admin"]["address"]["socket_address"]
    assert admin["address"] == "127.0.0.1"
    ports = _compose()["services"]["envoy"]["ports"]
    assert not any(str(admin["port_value"]) in str(p) for p in ports), ports
    assert "9901" in README.read_text() and "--network container:" in README.read_text()


def test_the_edge_runs_one_pinned_envoy_release_in_compose_and_kubernetes() -> None:
    """Thirteenth audit: the edge ran `envoy:v1.31-latest`, a moving tag of a branch that
    had its last release in July 2025. Both deployments name one release, v1.36 or later
    (the supported ones when this was written), never a moving tag."""
    edge = _by_kind("Deployment", "battleline-edge")
    images = {_compose()["services"]["envoy"]["image"],
              edge["spec"]["template"]["spec"]["containers"][0]["image"]}
    assert len(images) == 1, images
    image = images.pop()
    name, _, tag = image.partition(":")
    assert name == "envoyproxy/envoy" and "latest" not in tag, image
    major, minor, _patch = (int(part) for part in tag.split("@")[0].removeprefix("v").split("."))
    assert (major, minor) >= (1, 36), image


def test_envoy_takes_no_client_for_internal() -> None:
    """Envoy took every RFC 1918 address for an internal one (its default until it was
    asked to say so), and an internal client's x-envoy-* headers are obeyed; every pod
    and container has such an address. Both listeners name loopback alone."""
    for name in ("grpc", "grpc_internal"):
        manager = _connection_manager(_listener(name))
        assert manager["internal_address_config"] == {
            "cidr_ranges": [{"address_prefix": "127.0.0.1", "prefix_len": 32}]}, name


def test_envoy_circuit_breakers_outlast_a_few_clients_watch_streams() -> None:
    """Envoy's defaults (1,024 requests for the whole cluster, 3 retries) could be held by
    two addresses: each engine admits `streams_per_client` Watch streams per address, so
    behind N engines one address holds N times that. The thresholds are explicit, and
    max_requests takes at least 16 addresses even behind four engines (the README's
    `--scale engine=4`)."""
    (cluster,) = _envoy()["static_resources"]["clusters"]
    assert "circuit_breakers" in cluster, "Envoy's defaults: 1,024 requests, 3 retries"
    (limits,) = cluster["circuit_breakers"]["thresholds"]
    assert limits.get("priority", "DEFAULT") == "DEFAULT"
    per_address = EngineConfig().streams_per_client * 4
    assert limits["max_requests"] >= 16 * per_address
    assert limits["max_pending_requests"] > 1024
    assert limits["max_connections"] >= 1024
    assert limits["max_retries"] > 3
    assert limits["track_remaining"] is True
    assert cluster["per_connection_buffer_limit_bytes"] <= 64 * 1024


def test_envoy_limits_what_one_client_connection_can_hold() -> None:
    """On the clients' listener: 100 streams per connection, 64 KiB per stream window and
    256 KiB per connection window (Envoy's defaults: 2^31 - 1 streams, 256 MiB windows),
    small request headers, a 32 KiB connection buffer, and a cap on connections (the
    connection_limit filter, ahead of the HTTP connection manager). Every typed_config
    names the v3 type of its extension."""
    public = _listener("grpc")
    (chain,) = public["filter_chains"]
    names = [f["name"] for f in chain["filters"]]
    assert names == ["envoy.filters.network.connection_limit",
                     "envoy.filters.network.http_connection_manager"]
    limit = chain["filters"][0]["typed_config"]
    assert limit["stat_prefix"] and 1 <= limit["max_connections"] <= 8192
    assert public["per_connection_buffer_limit_bytes"] <= 64 * 1024
    manager = _connection_manager(public)
    http2 = manager["http2_protocol_options"]
    assert http2["max_concurrent_streams"] <= 128
    assert 65535 <= http2["initial_stream_window_size"] <= 128 * 1024
    assert http2["initial_stream_window_size"] <= http2["initial_connection_window_size"]
    assert http2["initial_connection_window_size"] <= 1024 * 1024
    assert 0 < manager["max_request_headers_kb"] <= 32
    assert manager["common_http_protocol_options"]["headers_with_underscores_action"] in (
        "REJECT_REQUEST", "DROP_HEADER")
    for listener in _envoy()["static_resources"]["listeners"]:
        (chain,) = listener["filter_chains"]
        assert chain["filters"][0]["name"] == "envoy.filters.network.connection_limit"
        filters = chain["filters"] + _connection_manager(listener)["http_filters"]
        for extension in filters:
            assert extension["typed_config"]["@type"] == TYPES[extension["name"]]
        assert _connection_manager(listener)["http2_protocol_options"][
            "max_concurrent_streams"] <= 4096


def test_envoy_times_out_slow_requests_but_not_quiet_watches() -> None:
    """Every listener: request headers within 10 s, the whole request within a minute
    (each call sends one message and ends its side), and an idle stream ends after at
    most 5 minutes; the idle timeout used to be off for every route. The server streams
    (every `returns (stream ...)` of the protos, and health watches) have routes of their
    own, ahead of the catch-all, with a long but finite idle timeout: the engine sends
    nothing on a quiet match (no keepalive message; HTTP/2 PINGs are not stream
    activity), so it outlasts the longest default silence (a 15-minute AI move, the
    15-minute lobby) twice over. They have no route or per-try timeout (a resumed
    Watch sends no headers until the next event, and a per-try timeout cuts a stream
    that has not started its answer). The other routes are bounded and outlast the
    slowest call (a review: the engine waits up to REVIEW_TIMEOUT_S for the AI)."""
    config = EngineConfig()
    quiet_s = max(config.default_clock_ms / 1000, config.ai_idle_ms / 1000, config.lobby_ttl_s)
    slowest_s = max(REVIEW_TIMEOUT_S, MAX_BUDGET_MS / 1000 + QUEUE_WAIT_S)
    streaming = _streaming_paths() | set(LONG_LIVED_DEFAULTS)
    assert "/battleline.v1.WatchService/Watch" in streaming
    listeners = _envoy()["static_resources"]["listeners"]
    for listener in listeners:
        manager = _connection_manager(listener)
        # Envoy's defaults when unset: no header or request timeout, a 5-minute idle one.
        assert 0 < _seconds(manager.get("request_headers_timeout", "0s")) <= 10
        assert 0 < _seconds(manager.get("request_timeout", "0s")) <= 60
        assert 0 < _seconds(manager.setdefault("stream_idle_timeout", "300s")) <= 300
        routes = _routes(listener)
        paths = [r["match"].get("path") for r in routes]
        assert routes[-1]["match"] == {"prefix": "/"}
        assert streaming <= set(paths[:-1]), streaming - set(paths)
        for route in routes:
            action = route["route"]
            idle = _seconds(action.get("idle_timeout", manager["stream_idle_timeout"]))
            assert idle > 0, route  # never off
            if route["match"].get("path") in streaming:
                assert 2 * quiet_s <= idle <= 4 * 3600, route
                assert _seconds(action["timeout"]) == 0, route
                assert "per_try_timeout" not in action.get("retry_policy", {}), route
            else:
                assert slowest_s < _seconds(action["timeout"]) <= 300, route
                per_try = action.get("retry_policy", {}).get("per_try_timeout")
                assert per_try is None or _seconds(per_try) > slowest_s, route
    assert [_routes(x) for x in listeners] == [_routes(listeners[0])] * 2  # the same routes


def test_envoy_does_not_forward_clients_battleline_headers() -> None:
    """The engine believes `x-battleline-client` only with the gateway secret, but the
    clients' listener should not pass either on: it removes every `x-battleline-*` header
    the services read (found in their source, so a new one must be added here). The web
    gateway's own headers go through the internal listener, which is not published and
    which the gateway (and the AI workers) dial."""
    names = set()
    for source in (ROOT / "services").rglob("*.py"):
        names |= set(re.findall(r"[\"'](x-battleline-[a-z0-9-]+)[\"']", source.read_text()))
    assert {"x-battleline-gateway-secret", "x-battleline-client"} <= names
    (host,) = _connection_manager(_listener("grpc"))["route_config"]["virtual_hosts"]
    assert names <= set(host.get("request_headers_to_remove", [])), "forwarded from clients"
    (inner,) = _connection_manager(_listener("grpc_internal"))["route_config"]["virtual_hosts"]
    assert not names & set(inner.get("request_headers_to_remove", []))
    services = _compose()["services"]
    public = _listener("grpc")["address"]["socket_address"]["port_value"]
    internal = _listener("grpc_internal")["address"]["socket_address"]["port_value"]
    assert services["envoy"]["ports"] == [f"{public}:{public}"]
    for name in ("web", "ai"):
        command = services[name]["command"]
        assert command[command.index("--engine") + 1] == f"envoy:{internal}", name


# -- compose (finding 3) ---------------------------------------------------------------


def test_compose_redis_requires_a_password_that_is_in_no_file_and_on_no_command_line() -> None:
    """Redis had no password. It reads one from a compose secret the operator creates
    (deploy/secrets/, git-ignored and outside the image's build context) and writes it
    into a private copy of its config on a tmpfs with shell builtins, never as
    `--requirepass`; its health check authenticates by REDISCLI_AUTH. The engines and AI
    workers get REDIS_URL from an env_file made from the same password: no REDIS_URL, and
    no URL with a password, is a value anywhere in compose.yaml."""
    compose = _compose()
    assert "secrets" in compose, "Redis has no password"
    assert compose["secrets"]["redis_password"] == {"file": "./secrets/redis_password"}
    redis = compose["services"]["redis"]
    assert redis["secrets"] == ["redis_password"]
    script = redis["command"][-1]
    assert "read -r password < /run/secrets/redis_password" in script
    assert "printf 'user default on >%s ' \"$$password\"" in script
    assert "> /run/redis/redis.conf" in script and "/run/redis" in redis["tmpfs"]
    assert "--requirepass" not in (DEPLOY / "compose.yaml").read_text()
    check = " ".join(redis["healthcheck"]["test"])
    assert "REDISCLI_AUTH" in check and " -a " not in check
    for value in _strings(compose):
        assert not re.search(r"rediss?://[^/@\s]*@", value), value
    for name in ("engine", "ai"):
        service = compose["services"][name]
        assert "REDIS_URL" not in service["environment"], name
        assert service["env_file"] == ["secrets/redis.env"], name
    assert "/secrets/" in (DEPLOY / ".gitignore").read_text().splitlines()
    git = shutil.which("git")
    if git is not None and (ROOT / ".git").exists():
        files = ["deploy/secrets/redis_password", "deploy/secrets/redis.env"]
        ignored = subprocess.run([git, "check-ignore", *files], cwd=ROOT, check=False,
                                 capture_output=True, text=True).stdout.split()
        assert ignored == files
    assert "deploy" in (ROOT / ".dockerignore").read_text().splitlines()
    readme = README.read_text()
    assert "openssl rand -hex 32 | tr -d '\\n' > deploy/secrets/redis_password" in readme
    assert "deploy/secrets/redis.env" in readme


@pytest.mark.parametrize("ending", ["", "\n"], ids=["bare", "trailing-newline"])
def test_the_deployed_redis_refuses_its_password_what_the_service_never_sends(
        tmp_path: Path, ending: str) -> None:
    """Whoever held the deployments' Redis password could run any command (REPLICAOF,
    MIGRATE, ACL SETUSER, FLUSHALL, SHUTDOWN...). Both start scripts make the password the
    default user's with deploy/redis-user.rules, the embedded Redis's own rules. The
    Kubernetes script is run here as written (its paths moved under a temporary
    directory, its port a free one on loopback), on the bundled redis-server, and its
    readiness probe's command against it with the bundled redis-cli. Also with a Secret
    made from a file ending in a newline (`openssl rand -hex 32 > file`, as
    deploy/README.md once said): Redis refused that config (the ACL rules on a line of
    their own), and the probe would have sent the newline as part of the password."""
    rules = (DEPLOY / "redis-user.rules").read_text()
    config = _by_kind("ConfigMap", "redis-config")["data"]
    assert rules.strip() == config["redis-user.rules"].strip() == USER_RULES
    compose = _compose()["services"]["redis"]
    assert "./redis-user.rules:/etc/redis/redis-user.rules:ro" in compose["volumes"]
    (container,) = _by_kind("StatefulSet", "redis")["spec"]["template"]["spec"]["containers"]
    (script,) = container["args"]
    assert _composing_line(script) == _composing_line(compose["command"][-1])
    for path in (DEPLOY / "redis.conf", DEPLOY / "compose.yaml", DEPLOY / "k8s/base/redis.yaml"):
        assert "requirepass" not in path.read_text(), path

    etc, run = tmp_path / "etc", tmp_path / "run"
    etc.mkdir(), run.mkdir()
    for name, text in config.items():
        (etc / name).write_text(text.replace("dir /data", f"dir {tmp_path}"))
    port, password = free_port(), "an-operators-password-0123456789"
    environment = {"REDIS_PASSWORD": password + ending, "PATH": os.defpath}
    script = script.replace("/etc/redis", str(etc)).replace("/run/redis", str(run))
    start = f"exec redis-server {run}/redis.conf"
    assert start in script
    script = script.replace(
        start, f"exec {redis_executable()} {run}/redis.conf --port {port} --bind 127.0.0.1")
    server = subprocess.Popen(["sh", "-c", script], env=environment,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        client = redis.Redis(port=port, password=password)
        deadline = time.monotonic() + 10
        while not _answers(client):
            assert time.monotonic() < deadline and server.poll() is None, "no Redis"
            time.sleep(0.05)
        assert client.set("k", "v") and client.get("k") == b"v"
        assert (run / "redis.conf").read_text().count("user default on >") == 1
        probe = container["readinessProbe"]["exec"]["command"]
        assert probe[:2] == ["sh", "-c"] and "redis-cli ping" in probe[2]
        check = probe[2].replace("redis-cli ping", f"{BIN / 'redis-cli'} -p {port} ping")
        assert subprocess.run([*probe[:2], check], env=environment, timeout=10).returncode == 0
        for call in (("CONFIG", "SET", "dir", "/tmp"), ("REPLICAOF", "NO", "ONE"),
                     ("ACL", "WHOAMI"), ("FLUSHALL",), ("SHUTDOWN", "NOSAVE")):
            with pytest.raises(redis.exceptions.NoPermissionError):
                client.execute_command(*call)
        with pytest.raises(redis.AuthenticationError):
            redis.Redis(port=port).get("k")
        client.close()
    finally:
        server.terminate()
        server.wait(10)


def _composing_line(script: str) -> str:
    """The line of a start script that writes the private config, its variable named alike
    (compose escapes `$` as `$$`)."""
    (line,) = [x.strip() for x in script.splitlines() if "> /run/redis/redis.conf" in x]
    return line.replace("$$password", "$password")


def _kubernetes_redis_config(tmp_path: Path, password: str) -> subprocess.CompletedProcess[str]:
    """Run the example Redis's start script up to its exec, with REDIS_PASSWORD set to
    `password`, and print the private config it wrote instead of starting Redis."""
    (container,) = _by_kind("StatefulSet", "redis")["spec"]["template"]["spec"]["containers"]
    (script,) = container["args"]
    etc, run = tmp_path / "etc", tmp_path / "run"
    etc.mkdir(exist_ok=True)
    run.mkdir(exist_ok=True)
    for name, text in _by_kind("ConfigMap", "redis-config")["data"].items():
        (etc / name).write_text(text)
    script = script.replace("/etc/redis", str(etc)).replace("/run/redis", str(run))
    script = script.replace(f"exec redis-server {run}/redis.conf", f"cat {run}/redis.conf")
    return subprocess.run(["sh", "-c", script], env={"REDIS_PASSWORD": password,
                                                     "PATH": os.defpath},
                          capture_output=True, text=True, timeout=10, check=False)


@pytest.mark.parametrize("ending", ["", "\n", "\n\n"])
def test_the_example_redis_takes_a_password_with_a_trailing_newline(
        tmp_path: Path, ending: str) -> None:
    """deploy/README.md made the `redis-auth` Secret from `openssl rand -hex 32 > file`,
    whose newline the Secret keeps; the start script's `printf 'user default on >%s '`
    then ended the line inside the password, the ACL rules stood on a line of their own,
    and Redis refused its config (FATAL CONFIG FILE ERROR). The script drops trailing
    newlines: one `user` line, rules and all, whatever the file ended with."""
    password = "0123456789abcdef0123456789abcdef"
    done = _kubernetes_redis_config(tmp_path, password + ending)
    assert done.returncode == 0, done.stderr
    lines = [x for x in done.stdout.splitlines() if x.startswith("user ")]
    assert lines == [f"user default on >{password} {USER_RULES}"]
    rules = [x for x in done.stdout.splitlines() if x.startswith("~*")]
    assert rules == []  # the rules are on the user line, not on one of their own


@pytest.mark.parametrize("password", ["short", "0123456789 abcdef0123",
                                      "0123456789abcdef\n0123456789"])
def test_the_example_redis_refuses_a_password_that_would_split_its_user_line(
        tmp_path: Path, password: str) -> None:
    """A space or a line break inside the password would cut the `user` line as the
    trailing newline did; a short one is a mistake (compose's script refuses it too).
    The script stops with a reason, before writing the config."""
    done = _kubernetes_redis_config(tmp_path, password)
    assert done.returncode != 0 and "redis-auth password" in done.stderr
    assert not (tmp_path / "run" / "redis.conf").exists()


def test_every_secret_the_readme_makes_has_no_trailing_newline() -> None:
    """Every `openssl rand` deploy/README.md (and compose.yaml's header) writes to a file
    goes through `tr -d '\\n'`: `kubectl create secret --from-file` keeps a file's last
    newline, and the Redis password's once broke the example Redis's config."""
    made = 0
    for text in (README.read_text(), (DEPLOY / "compose.yaml").read_text()):
        for line in text.splitlines():
            for command in re.findall(r"openssl rand [^&;)|]*(?:\|[^&;)>]*)?>\s*\S+", line):
                made += 1
                assert re.search(r"\| tr -d '\\n' >", command), command
    assert made >= 5  # compose's and Kubernetes's Redis passwords, the AI key, the gateway secret


def _answers(client: redis.Redis) -> bool:
    try:
        return bool(client.ping())
    except redis.ConnectionError:
        return False


def test_compose_web_container_shares_no_network_with_redis() -> None:
    """Every container was on one network, so the web container (facing browsers) could
    reach Redis. Redis is alone with the engines and AI workers on an internal network;
    the web container is on `front` with Envoy only."""
    compose = _compose()
    services = compose["services"]
    nets = {name: _networks(service) for name, service in services.items()}
    assert not nets["redis"] & nets["web"]
    assert not nets["redis"] & nets["envoy"]
    assert not nets["web"] & (nets["engine"] | nets["ai"])
    for name in ("engine", "ai"):
        assert nets["redis"] & nets[name], name
    assert nets["web"] & nets["envoy"]
    for network in nets["redis"]:
        assert compose["networks"][network]["internal"] is True, network


# -- Kubernetes (finding 3) ------------------------------------------------------------


def test_compose_engines_serve_metrics_on_their_own_loopback() -> None:
    """Thirteenth audit: with no --metrics-host the engines' /metrics listened on every
    network they join (the AI workers', Envoy's, Redis's) though nothing there scrapes."""
    engine = _compose()["services"]["engine"]
    command = engine["command"]
    assert command[command.index("--metrics-host") + 1] == "127.0.0.1"
    assert engine["environment"]["BATTLELINE_METRICS_PORT"] not in map(str, engine["expose"])


def test_kubernetes_ships_no_secret_and_names_the_secrets_to_create() -> None:
    """The manifests shipped Redis's password as a placeholder (`change-me`, in
    REDIS_URL and in the example Redis's Secret), and until the twenty-fourth session
    the AI's key and the gateway secret too (refused at start, but a published value to
    forget). No Secret is shipped now: the pods read `battleline-redis`, `redis-auth`,
    `battleline-ai` and `battleline-gateway`, each created by the operator from a file
    with the commands in deploy/README.md."""
    assert not [d for d in _resources() if d["kind"] == "Secret"]
    for path in K8S_FILES:
        assert "change-me" not in path.read_text(), path
    for path in K8S_FILES:
        assert not re.search(r"rediss?://[^/@\s]*@", path.read_text()), path
    for name in ("battleline-engine", "battleline-ai"):
        container = _by_kind("Deployment", name)["spec"]["template"]["spec"]["containers"][0]
        assert {"secretRef": {"name": "battleline-redis"}} in container["envFrom"], name
    (redis,) = _by_kind("StatefulSet", "redis")["spec"]["template"]["spec"]["containers"]
    (password,) = [e for e in redis["env"] if e["name"] == "REDIS_PASSWORD"]
    assert password["valueFrom"]["secretKeyRef"] == {"name": "redis-auth", "key": "password"}
    readme = README.read_text()
    assert "create secret generic redis-auth --from-file=password=" in readme
    assert "create secret generic battleline-redis --from-env-file=" in readme
    assert "create secret generic battleline-ai --from-file=BATTLELINE_AI_KEY=" in readme
    assert "--from-file=BATTLELINE_GATEWAY_SECRET=" in readme
    assert "--from-literal" not in readme.replace("rather than `--from-literal`", "")


def test_only_the_engines_reach_the_ai_service() -> None:
    """The engines call AiService (hints and reviews, BATTLELINE_AI_ADDRESS); the AI
    workers only dial out. A NetworkPolicy admits the engine pods on the AI's gRPC port
    and nothing else to the AI pods."""
    host, port = _by_kind("ConfigMap", "battleline-config")["data"][
        "BATTLELINE_AI_ADDRESS"].rsplit(":", 1)
    ai = _by_kind("Deployment", host)["spec"]["template"]
    engine = _by_kind("Deployment", "battleline-engine")["spec"]["template"]
    policy = _policy_for(ai["metadata"]["labels"]["app.kubernetes.io/name"])
    assert policy["policyTypes"] == ["Ingress"]
    (rule,) = policy["ingress"]
    (source,) = rule["from"]
    assert source == {"podSelector": {"matchLabels": {
        "app.kubernetes.io/name": engine["metadata"]["labels"]["app.kubernetes.io/name"]}}}
    assert rule["ports"] == [{"protocol": "TCP", "port": int(port)}]
    assert [p["containerPort"] for p in ai["spec"]["containers"][0]["ports"]] == [int(port)]


def test_the_engines_are_reached_by_the_edge_alone_and_metrics_by_the_scraper() -> None:
    """The engines' gRPC port is open to the edge (Envoy: the rapid-reset and connection
    limits the engine lacks, twelfth audit) only; it was open to the web front and the AI
    workers too (hence the name, which docs/SECURITY.md cites), which dialled a ClusterIP
    Service and so sent all their calls to one engine: they reach the engines through the
    edge's internal listener now, so no pod skips the edge.
    Their metrics port only to pods labelled `app.kubernetes.io/name: prometheus` in the
    monitoring namespace. No rule admits a port it does not name."""
    engine = _by_kind("Deployment", "battleline-engine")["spec"]["template"]
    ports = {p["name"]: p["containerPort"] for p in engine["spec"]["containers"][0]["ports"]}
    assert set(ports) == {"grpc", "metrics"}
    policy = _policy_for(engine["metadata"]["labels"]["app.kubernetes.io/name"])
    assert policy["policyTypes"] == ["Ingress"]
    scraper = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}},
               "podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}}}
    callers = {"battleline-edge"}
    for rule in policy["ingress"]:
        admitted = {p["port"] for p in rule["ports"]}  # a rule without ports admits all
        if ports["metrics"] in admitted:
            assert admitted == {ports["metrics"]} and rule["from"] == [scraper], rule
        else:
            (source,) = rule["from"]
            (match,) = source["podSelector"]["matchExpressions"]
            assert admitted == {ports["grpc"]} and set(source) == {"podSelector"}, rule
            assert match["key"] == "app.kubernetes.io/name" and match["operator"] == "In"
            assert set(match["values"]) == callers, rule
    for name in callers:  # each names a workload of the base
        assert _by_kind("Deployment", name)["spec"]["template"]["metadata"]["labels"][
            "app.kubernetes.io/name"] == name
    opened = {p["port"] for rule in policy["ingress"] for p in rule["ports"]}
    assert opened == set(ports.values())
    assert "app.kubernetes.io/name: prometheus" in README.read_text()


def test_every_base_manifest_is_in_the_kustomization() -> None:
    """The schema tests read every file of k8s/base; `kubectl apply -k` reads only what
    kustomization.yaml lists, so a policy left out of it would pass here and never apply."""
    base = DEPLOY / "k8s" / "base"
    kustomization = yaml.safe_load((base / "kustomization.yaml").read_text())
    files = {p.name for p in K8S_FILES if p.parent == base} - {"kustomization.yaml"}
    assert files | {"../../edge"} == set(kustomization["resources"])
    edge = yaml.safe_load((DEPLOY / "edge" / "kustomization.yaml").read_text())
    assert edge["resources"] == ["edge.yaml"]
    (envoy,) = edge["configMapGenerator"]
    assert envoy["files"] == ["envoy.yaml"]  # the file compose mounts, not a copy
    volumes = _by_kind("Deployment", "battleline-edge")["spec"]["template"]["spec"]["volumes"]
    assert {"name": "config", "configMap": {"name": envoy["name"]}} in volumes



def test_envoy_closes_connections_that_reset_their_streams_at_once() -> None:
    """Sixth audit: an HTTP/2 rapid reset on the engine's own port (4 connections opening
    and resetting streams) made most other clients' calls fail, and grpc has no defence
    against it. Envoy, in front of every engine, closes such connections early and reads
    one new stream per connection per I/O cycle; the keys are Envoy's runtime keys, so a
    misspelt one would be silently ignored: they are checked by name."""
    (layer,) = _envoy()["layered_runtime"]["layers"]
    assert layer["static_layer"] == {
        "overload.premature_reset_total_stream_count": 100,
        "overload.premature_reset_min_stream_lifetime_seconds": 1,
        "http.max_requests_per_io_cycle": 1,
    }


def _pods() -> Iterator[tuple[str, dict[str, Any]]]:
    """Each workload of the base and its pod spec."""
    for doc in _resources():
        if doc["kind"] in ("Deployment", "StatefulSet"):
            yield doc["metadata"]["name"], doc["spec"]["template"]["spec"]


def test_every_pod_runs_unprivileged_and_without_an_api_token() -> None:
    """Twelfth audit: the example Redis had no container hardening and every pod carried
    a Kubernetes API token it never uses (the internet-facing web pods too)."""
    names = set()
    for name, pod in _pods():
        names.add(name)
        assert pod["automountServiceAccountToken"] is False, name
        assert pod["securityContext"]["runAsNonRoot"] is True, name
        assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}, name
        for container in pod["containers"]:
            assert container["securityContext"] == {
                "allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                "capabilities": {"drop": ["ALL"]}}, (name, container["name"])
    assert names == {"battleline-engine", "battleline-ai", "battleline-web", "battleline-edge",
                     "redis"}
    services = _compose()["services"]
    assert set(services) == {"engine", "ai", "web", "envoy", "redis"}
    for name, service in services.items():  # compose: every container (seventeenth audit:
        # Redis and Envoy kept Docker's default capabilities and a writable filesystem)
        assert service["cap_drop"] == ["ALL"] and service["read_only"] is True, name
        assert service["security_opt"] == ["no-new-privileges:true"], name
        # Redis's start script and entrypoint chown, read the 0600 secret, drop to redis.
        assert service.get("cap_add", []) == (
            ["CHOWN", "DAC_OVERRIDE", "FOWNER", "SETGID", "SETUID"] if name == "redis" else [])
    assert services["envoy"]["user"] == "101:101"  # as in Kubernetes: no su-exec, no caps


def test_redis_refuses_writes_before_its_container_is_killed() -> None:
    """Seventeenth audit: the example Redis had a memory limit (Kubernetes) or none
    (compose) and no `maxmemory`: full, it would be killed and replay its AOF into the
    same limit. Both configs set a ceiling well under the container's limit with
    noeviction (the engines then answer storage-full; no match is dropped)."""
    (container,) = _by_kind("StatefulSet", "redis")["spec"]["template"]["spec"]["containers"]
    limits = {"k8s": container["resources"]["limits"]["memory"],
              "compose": _compose()["services"]["redis"]["mem_limit"]}
    assert limits == {"k8s": "1Gi", "compose": "1g"}
    for name, text in (("k8s", _by_kind("ConfigMap", "redis-config")["data"]["redis.conf"]),
                       ("compose", (DEPLOY / "redis.conf").read_text())):
        settings = dict(line.split(None, 1) for line in text.splitlines()
                        if line.strip() and not line.lstrip().startswith("#"))
        assert settings["maxmemory-policy"] == "noeviction", name
        assert settings["maxmemory"].endswith("mb"), name
        assert 256 <= int(settings["maxmemory"][:-2]) <= 0.75 * 1024, name


def test_scratch_space_is_bounded_and_the_public_pods_dial_the_engines_only() -> None:
    """Seventeenth audit: the engine's and AI's /tmp had no size limit, and the web front
    and the edge, the pods the internet reaches, could dial anything (Redis, the AI
    service, the outside). Every emptyDir is capped; those two may dial their next hop to
    the engines (the web front the edge's internal listener, the edge the engines' gRPC
    port) and the cluster's DNS, nothing else."""
    for name, pod in _pods():
        for volume in pod.get("volumes", []):
            if "emptyDir" in volume:
                assert "sizeLimit" in volume["emptyDir"], (name, volume["name"])
    internal = _listener("grpc_internal")["address"]["socket_address"]["port_value"]
    for workload, policy, target, port in (
            ("battleline-web", "web-dials-engines-only", "battleline-edge", internal),
            ("battleline-edge", "edge-dials-engines-only", "battleline-engine", 50051)):
        spec = _by_kind("NetworkPolicy", policy)["spec"]
        assert spec["podSelector"]["matchLabels"] == {"app.kubernetes.io/name": workload}
        assert spec["policyTypes"] == ["Egress"]
        to_engines, to_dns = spec["egress"]
        assert to_engines == {
            "to": [{"podSelector": {"matchLabels": {"app.kubernetes.io/name": target}}}],
            "ports": [{"protocol": "TCP", "port": port}]}
        assert to_dns["to"][0]["podSelector"] == {"matchLabels": {"k8s-app": "kube-dns"}}
        assert {p["port"] for p in to_dns["ports"]} == {53}


def test_nothing_reaches_a_pod_unless_a_policy_says_so_and_redis_dials_out_to_nobody() -> None:
    """A default-deny ingress policy under the others; the edge's and the web front's ports
    are the only ones open to all; Redis has an egress policy with no rule (no MIGRATE or
    REPLICAOF to the outside with a stolen password)."""
    deny = _by_kind("NetworkPolicy", "default-deny-ingress")["spec"]
    assert deny == {"podSelector": {}, "policyTypes": ["Ingress"]}
    for policy, workload, public in (("public-edge", "battleline-edge", "grpc"),
                                     ("public-web", "battleline-web", "http")):
        spec = _by_kind("NetworkPolicy", policy)["spec"]
        (rule,) = spec["ingress"]
        container = _by_kind("Deployment", workload)["spec"]["template"]["spec"]["containers"][0]
        assert "from" not in rule and [p["port"] for p in rule["ports"]] == [
            p["containerPort"] for p in container["ports"] if p["name"] == public], policy
    redis_out = _by_kind("NetworkPolicy", "redis-dials-out-to-nobody")["spec"]
    assert redis_out["policyTypes"] == ["Egress"] and "egress" not in redis_out


def test_envoy_resends_a_create_or_join_only_when_no_engine_saw_it() -> None:
    """UNAVAILABLE can come after Redis ran a create (its reply lost on the way back), so
    a retry on it made a second match (twelfth audit): CreateMatch and JoinMatch are
    resent only on a failed connection or a refused stream, as the client library does;
    every other route may also retry UNAVAILABLE."""
    once = ("/battleline.v1.LobbyService/CreateMatch", "/battleline.v1.LobbyService/JoinMatch")
    for listener in _envoy()["static_resources"]["listeners"]:
        routes = _routes(listener)
        for path in once:
            retry = _route_of(routes, path)["route"]["retry_policy"]["retry_on"].split(",")
            assert sorted(retry) == ["connect-failure", "refused-stream"], path
        assert "unavailable" in _route_of(routes, "/battleline.v1.GameService/GetView")[
            "route"]["retry_policy"]["retry_on"]


def _route_of(routes: list[dict[str, Any]], path: str) -> dict[str, Any]:
    """The route Envoy takes for `path`: the first whose path, regex or prefix matches."""
    for route in routes:
        match = route["match"]
        if (match.get("path") == path or path.startswith(match.get("prefix", "\0"))
                or ("safe_regex" in match and re.fullmatch(match["safe_regex"]["regex"], path))):
            return route
    raise AssertionError(f"no route for {path}")


def test_the_edge_internal_listener_is_for_the_web_and_ai_pods_only() -> None:
    """The internal listener passes the callers' own x-battleline-* headers on and allows
    2,048 streams per connection; compose keeps it unpublished, on the networks of the
    web, AI and engine containers only. In Kubernetes its Service
    (`battleline-edge-internal`) targets the Envoy pods' port of that listener, and one
    NetworkPolicy admits the web and AI pods, and no one else, on it; the public one
    admits everyone on the clients' listener only."""
    internal = _listener("grpc_internal")["address"]["socket_address"]["port_value"]
    public = _listener("grpc")["address"]["socket_address"]["port_value"]
    edge = _by_kind("Deployment", "battleline-edge")["spec"]["template"]
    ports = {p["name"]: p["containerPort"] for p in edge["spec"]["containers"][0]["ports"]}
    assert ports == {"grpc": public, "grpc-internal": internal}
    service = _by_kind("Service", "battleline-edge-internal")["spec"]
    assert service["type"] == "ClusterIP"
    assert service["selector"] == {"app.kubernetes.io/name": "battleline-edge"}
    assert [(p["port"], p["targetPort"]) for p in service["ports"]] == [(internal,
                                                                         "grpc-internal")]
    admitting = [d["spec"] for d in _resources() if d["kind"] == "NetworkPolicy"
                 and d["spec"]["podSelector"] == {"matchLabels": {
                     "app.kubernetes.io/name": "battleline-edge"}}
                 and "Ingress" in d["spec"]["policyTypes"]]
    by_port = {p["port"]: rule for spec in admitting for rule in spec["ingress"]
               for p in rule["ports"]}
    assert set(by_port) == {public, internal}
    assert "from" not in by_port[public]
    (source,) = by_port[internal]["from"]
    (match,) = source["podSelector"]["matchExpressions"]
    assert set(source) == {"podSelector"} and match["operator"] == "In"
    assert set(match["values"]) == {"battleline-web", "battleline-ai"}
    for name in match["values"]:
        assert _by_kind("Deployment", name)["spec"]["template"]["metadata"]["labels"][
            "app.kubernetes.io/name"] == name
    assert "network-policy-edge.yaml" in README.read_text()


def test_an_engine_leaves_envoys_rotation_before_it_refuses_calls() -> None:
    """The engine turns NOT_SERVING on SIGTERM and refuses new calls `drain_s` (1 s)
    later, while Envoy needs `unhealthy_threshold` failed checks `interval` apart (up to
    ~5 s): calls sent in between were refused. In Kubernetes a preStop hook keeps the pod
    serving first, long enough for it to leave the headless Service's DNS and Envoy's
    next resolution (Envoy drops a host gone from DNS at once: ignore_health_on_host_
    removal), and the grace period covers preStop, drain and the engine's --grace."""
    engine = _by_kind("Deployment", "battleline-engine")["spec"]["template"]["spec"]
    (container,) = engine["containers"]
    command = container["lifecycle"]["preStop"]["exec"]["command"]
    assert command[0] == "sleep" and len(command) == 2  # the image's coreutils, no shell
    sleep_s = float(command[1])
    drain_s = ServerConfig().drain_s
    args = container["args"]
    grace_s = float(args[args.index("--grace") + 1])
    (cluster,) = _envoy()["static_resources"]["clusters"]
    assert cluster["ignore_health_on_host_removal"] is True
    assert cluster["type"] == "STRICT_DNS"
    # A deleted pod leaves the endpoints within a second; CoreDNS answers live 5 s; Envoy
    # resolves again every dns_refresh_rate. All of it before the engine refuses a call.
    coredns_ttl_s, endpoints_s = 5.0, 1.0
    assert sleep_s + drain_s >= endpoints_s + coredns_ttl_s + _seconds(cluster["dns_refresh_rate"])
    # Without the DNS path, Envoy's health check would notice within this long of SIGTERM.
    (check,) = cluster["health_checks"]
    noticed_s = check["unhealthy_threshold"] * _seconds(check["interval"]) + _seconds(
        check["timeout"])
    assert noticed_s > drain_s  # why the hook is needed at all
    assert engine["terminationGracePeriodSeconds"] >= sleep_s + drain_s + grace_s + 10
    readme = README.read_text()
    period = engine["terminationGracePeriodSeconds"]
    assert "preStop" in readme and f"terminationGracePeriodSeconds: {period}" in readme



def _edge_stop_hook() -> tuple[dict[str, Any], str]:
    """The edge pod's spec and its preStop hook's bash script."""
    edge = _by_kind("Deployment", "battleline-edge")["spec"]["template"]["spec"]
    (container,) = edge["containers"]
    command = container["lifecycle"]["preStop"]["exec"]["command"]
    assert command[:2] == ["/bin/bash", "-c"] and len(command) == 3
    return edge, command[2]


def _hook_times(script: str) -> tuple[float, float]:
    """(how long the hook waits for the admin's answer, how long it then sleeps)."""
    answer = re.search(r"read -r -t (\d+) ", script)
    wait = re.search(r"^sleep (\d+)$", script, re.M)
    assert answer and wait, script
    return float(answer.group(1)), float(wait.group(1))


def _run_hook(script: str, admin_port: int, log: Path) -> tuple[float, str]:
    """The hook as bash runs it, aimed at `admin_port`, its wait cut to nothing and what
    it tells the pod's log written to `log`: (seconds it took, that line)."""
    admin = _envoy()["admin"]["address"]["socket_address"]
    local = script.replace(f"/dev/tcp/{admin['address']}/{admin['port_value']}",
                           f"/dev/tcp/127.0.0.1/{admin_port}")
    local = re.sub(r"^sleep \d+$", "sleep 0", local, flags=re.M)
    local = local.replace("/proc/1/fd/2", str(log))  # the container's PID 1: Envoy
    assert local.count(str(admin_port)) == 1 and "sleep 0" in local and str(log) in local
    started = time.monotonic()
    done = subprocess.run(["bash", "-c", local], capture_output=True, text=True, timeout=20)
    assert done.returncode == 0, done.stderr
    return time.monotonic() - started, log.read_text()


def test_an_edge_pod_drains_its_connections_before_it_stops(tmp_path: Path) -> None:
    """A stopping Envoy pod asks its admin for a graceful drain that does not exit (each
    HTTP/2 connection gets a GOAWAY, calls in flight finish), then waits while the load
    balancer stops sending it connections; the listeners outlast the wait however slow
    the admin's answer, and the grace period covers it all. Run here against a stand-in
    admin port: the request must be the one Envoy's admin takes."""
    edge, script = _edge_stop_hook()
    answer_s, wait_s = _hook_times(script)
    (container,) = edge["containers"]
    args = container["args"]
    assert float(args[args.index("--drain-time-s") + 1]) > answer_s + wait_s
    assert args[args.index("--drain-strategy") + 1] == "immediate"
    assert edge["terminationGracePeriodSeconds"] >= answer_s + wait_s + 10
    assert "--drain-time-s" in README.read_text()

    received: list[bytes] = []
    with socket.create_server(("127.0.0.1", 0)) as admin:
        def answer() -> None:
            conn, _ = admin.accept()
            with conn:
                data = b""
                while b"\r\n\r\n" not in data:
                    data += conn.recv(4096)
                received.append(data)
                conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-length: 3\r\n\r\nOK\n")
        server = threading.Thread(target=answer, daemon=True)
        server.start()
        _, told = _run_hook(script, admin.getsockname()[1], tmp_path / "log")
        server.join(5)
    (request,) = received
    head = request.decode().split("\r\n")
    assert head[0] == "POST /drain_listeners?graceful&skip_exit HTTP/1.1"
    assert "Content-Length: 0" in head
    assert told == "preStop: drain_listeners: HTTP/1.1 200 OK\n"


def test_an_edge_pod_stops_whatever_its_admin_does(tmp_path: Path) -> None:
    """Audit of the hook: it read the admin's answer to its end with no limit, so a wedged
    admin held it until the grace period ran out. No admin listening, or one that never
    answers: the hook says so in the log and goes on, in at most its answer wait."""
    _, script = _edge_stop_hook()
    answer_s, _ = _hook_times(script)
    took_s, told = _run_hook(script, free_port(), tmp_path / "gone.log")
    assert told == "preStop: drain_listeners: admin unreachable\n"
    with socket.create_server(("127.0.0.1", 0)) as mute:  # accepts, never answers
        took_s, told = _run_hook(script, mute.getsockname()[1], tmp_path / "mute.log")
    assert told == f"preStop: drain_listeners: no answer within {answer_s:g} s\n"
    assert answer_s <= took_s < answer_s + 3
