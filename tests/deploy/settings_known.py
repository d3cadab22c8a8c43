"""Every IGGY_KAFKA_* variable that deploy/ sets is a setting the gateway accepts,
with that value: the gateway binary runs with each deployment's variables, on top of
the image's own (Dockerfile ENV), and must get past its settings (an unknown or
malformed one, or two that cannot be combined, stops it with exit status 2 and
"configuration error") to the point where it looks for Iggy.

The TLS example (deploy/examples/tls/) is checked as applied: its patches merged into
the Deployment and Service as `kubectl patch` merges them, the results validated
against the Kubernetes schemas, every listener's port a container port the Service
reaches, and the certificate and key files ones the Secret's volume provides (the run
gets a certificate made with openssl at those names).

The listener and Iggy addresses are checked as addresses here, then pointed at
loopback (free ports, no Iggy), so the run binds nothing public and ends by itself.

usage: settings_known.py GATEWAY_BINARY
"""

import ipaddress
import os
import re
import socket
import subprocess
import sys
import tempfile
from pathlib import Path, PurePosixPath

import kubernetes_validate
import yaml

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
# What the downward API and the Secret fill in on a cluster.
POD_IP = "10.1.2.3"
SECRET_VALUE = "iggy"


KUBERNETES_VERSION = "1.37"
TLS_EXAMPLE = DEPLOY / "examples/tls"


def load(path):
    return yaml.safe_load(path.read_text())


def dockerfile_env():
    text = (DEPLOY / "Dockerfile").read_text().replace("\\\n", " ")
    env = {}
    for line in text.splitlines():
        if line.startswith("ENV "):
            env.update(pair.split("=", 1) for pair in line[4:].split())
    return env


def gateway_container(deployment):
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return container


def kubernetes_env(deployment):
    """The container's environment: the image's, the ConfigMap's, then the Deployment's
    own entries, with $(VAR) references expanded as the kubelet does."""
    env = dockerfile_env()
    env.update(load(DEPLOY / "kubernetes/configmap.yaml")["data"])
    for var in gateway_container(deployment).get("env", []):
        source = var.get("valueFrom", {})
        if "fieldRef" in source:
            env[var["name"]] = POD_IP
        elif "secretKeyRef" in source:
            env[var["name"]] = SECRET_VALUE
        else:
            env[var["name"]] = re.sub(
                r"\$\((\w+)\)", lambda m: env.get(m[1], m[0]), var["value"]
            )
    return env


def compose_env():
    compose = load(DEPLOY / "docker-compose.yml")
    env = dockerfile_env()
    env.update({k: str(v) for k, v in compose["services"]["gateway"]["environment"].items()})
    return env


def merge(target, patch):
    """`kubectl patch` (a strategic merge) as far as the examples use it: maps merge,
    lists of maps merge by `name` (kubectl's key for containers, env and volumes; the
    ports and mounts the examples add are new under either key), other values replace."""
    if isinstance(target, dict) and isinstance(patch, dict):
        merged = dict(target)
        for k, v in patch.items():
            merged[k] = merge(target[k], v) if k in target else v
        return merged
    if isinstance(target, list) and isinstance(patch, list) and patch and isinstance(patch[0], dict):
        merged = list(target)
        for item in patch:
            at = [i for i, t in enumerate(merged) if t.get("name") == item.get("name")]
            if at:
                merged[at[0]] = merge(merged[at[0]], item)
            else:
                merged.append(item)
        return merged
    return patch


def tls_example():
    """The Deployment and Service with the TLS example's patches applied, and its Secret."""
    deployment = merge(
        load(DEPLOY / "kubernetes/deployment.yaml"), load(TLS_EXAMPLE / "deployment-patch.yaml")
    )
    service = merge(
        load(DEPLOY / "kubernetes/service.yaml"), load(TLS_EXAMPLE / "service-patch.yaml")
    )
    return deployment, service, load(TLS_EXAMPLE / "secret.yaml")


def listener_ports(settings):
    """Each listener's port, or a problem with the `listeners` value."""
    ports = {}
    for entry in settings.get("IGGY_KAFKA_LISTENERS", "").split(","):
        name, sep, address = entry.partition("://")
        host, _, port = address.rpartition(":")
        try:
            if not sep or (host and not ipaddress.ip_address(host)):
                raise ValueError(entry)
            ports[name] = int(port)
        except ValueError:
            return None, f"listener not NAME://IP:PORT: {entry!r}"
    return ports, None


def tls_problems(deployment, service, secret, env):
    """What keeps the TLS example from working once applied: schema errors, a listener
    port the container or the Service does not open, a certificate or key file no
    mounted volume of the Secret provides."""
    problems = []
    for obj in (deployment, service):
        try:
            kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)
        except kubernetes_validate.ValidationError as e:
            problems.append(f"{obj['kind']} with the patch applied: {e.message}")
    container = gateway_container(deployment)
    container_ports = {p["containerPort"]: p.get("name") for p in container["ports"]}
    served = {p["targetPort"] for p in service["spec"]["ports"]}
    ports, problem = listener_ports(env)
    for name, port in (ports or {}).items():
        if port not in container_ports:
            problems.append(f"listener {name}: port {port} is not a container port")
        elif container_ports[port] not in served and port not in served:
            problems.append(f"listener {name}: the Service does not reach port {port}")
    problems.extend([problem] if problem else [])
    volumes = {v["name"]: v for v in deployment["spec"]["template"]["spec"]["volumes"]}
    for key in ("IGGY_KAFKA_SSL_CERTIFICATE_FILE", "IGGY_KAFKA_SSL_KEY_FILE"):
        path = PurePosixPath(env.get(key, ""))
        mount = next(
            (m for m in container.get("volumeMounts", []) if PurePosixPath(m["mountPath"]) == path.parent),
            None,
        )
        source = volumes.get(mount["name"], {}).get("secret", {}) if mount else {}
        if source.get("secretName") != secret["metadata"]["name"]:
            problems.append(f"{key}={path}: not in a volume of Secret {secret['metadata']['name']}")
        elif path.name not in secret.get("stringData", secret.get("data", {})):
            problems.append(f"{key}={path}: the Secret has no key {path.name}")
    return problems


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def address_problem(value):
    host, _, port = value.rpartition(":")
    try:
        ipaddress.ip_address(host)
        if not 0 <= int(port) <= 65535:
            raise ValueError(port)
    except ValueError:
        return f"not an IP:port address: {value!r}"
    return None


def self_signed(cert, key):
    """A certificate and its key, made with openssl, at `cert` and `key`."""
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=iggy-kafka-gateway", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )


def check(gateway, name, env):
    settings = {k: v for k, v in env.items() if k.startswith("IGGY_KAFKA_")}
    if not settings:
        return f"{name}: sets no IGGY_KAFKA_* variable"
    for key in ("IGGY_KAFKA_BIND_ADDRESS", "IGGY_KAFKA_ADMIN_BIND_ADDRESS"):
        if key in settings and (problem := address_problem(settings[key])):
            return f"{name}: {key} {problem}"
    ports, problem = listener_ports(settings)
    if "IGGY_KAFKA_LISTENERS" in settings and problem:
        return f"{name}: IGGY_KAFKA_LISTENERS {problem}"
    with tempfile.TemporaryDirectory() as tmp:
        password = Path(tmp) / "password"
        password.write_text("secret\n")
        run_env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            **settings,
            "IGGY_KAFKA_ADMIN_BIND_ADDRESS": "127.0.0.1:0",
            "IGGY_KAFKA_DATA_DIR": str(Path(tmp) / "data"),
            # Reaching for Iggy proves the settings were accepted; nothing listens here.
            "IGGY_KAFKA_BACKEND": "iggy",
            "IGGY_KAFKA_IGGY_ADDRESS": f"127.0.0.1:{free_port()}",
            "IGGY_KAFKA_IGGY_CONNECT_TIMEOUT_MS": "1",
            "RUST_LOG": "warn",
        }
        if "IGGY_KAFKA_LISTENERS" in settings:
            run_env["IGGY_KAFKA_LISTENERS"] = ",".join(f"{n}://127.0.0.1:0" for n in ports)
        else:
            run_env["IGGY_KAFKA_BIND_ADDRESS"] = "127.0.0.1:0"
        if "IGGY_KAFKA_IGGY_PASSWORD_FILE" in settings:
            run_env["IGGY_KAFKA_IGGY_PASSWORD_FILE"] = str(password)
        if "IGGY_KAFKA_SSL_CERTIFICATE_FILE" in settings:
            # The files the Secret's volume provides, under their names.
            cert, key = (
                str(Path(tmp) / PurePosixPath(settings[f"IGGY_KAFKA_SSL_{k}_FILE"]).name)
                for k in ("CERTIFICATE", "KEY")
            )
            self_signed(cert, key)
            run_env["IGGY_KAFKA_SSL_CERTIFICATE_FILE"] = cert
            run_env["IGGY_KAFKA_SSL_KEY_FILE"] = key
        try:
            run = subprocess.run(
                [gateway], env=run_env, capture_output=True, text=True, timeout=30
            )
        except subprocess.TimeoutExpired:
            return f"{name}: the gateway did not stop (it should not find Iggy)"
    if run.returncode == 2 or "configuration error" in run.stderr:
        return f"{name}: refused its settings:\n{run.stderr}"
    if "unreachable" not in run.stderr:
        return f"{name}: stopped before looking for Iggy (status {run.returncode}):\n{run.stderr}"
    print(f"{name}: {len(settings)} settings accepted")
    return None


def main():
    (gateway,) = sys.argv[1:]
    if not os.access(gateway, os.X_OK):
        sys.exit(f"no gateway binary at {gateway} (cargo build --release)")
    tls_deployment, tls_service, tls_secret = tls_example()
    tls_env = kubernetes_env(tls_deployment)
    sources = {
        "kubernetes (ConfigMap and Deployment)": kubernetes_env(
            load(DEPLOY / "kubernetes/deployment.yaml")
        ),
        "kubernetes with examples/tls/": tls_env,
        "docker-compose.yml": compose_env(),
        "Dockerfile": dockerfile_env(),
    }
    problems = [p for name, env in sources.items() if (p := check(gateway, name, env))]
    problems += [
        f"examples/tls/: {p}" for p in tls_problems(tls_deployment, tls_service, tls_secret, tls_env)
    ]
    for p in problems:
        print(f"FAIL {p}")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
