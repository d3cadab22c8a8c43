"""Every IGGY_KAFKA_* variable that deploy/ sets is a setting the gateway accepts,
with that value: the gateway binary runs with each deployment's variables and must
get past its settings (an unknown or malformed one stops it with exit status 2 and
"configuration error") to the point where it looks for Iggy.

The listener and Iggy addresses are checked as addresses here, then pointed at
loopback (free ports, no Iggy), so the run binds nothing public and ends by itself.

usage: settings_known.py GATEWAY_BINARY
"""

import ipaddress
import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
# What the downward API and the Secret fill in on a cluster.
POD_IP = "10.1.2.3"
SECRET_VALUE = "iggy"


def kubernetes_env():
    config = yaml.safe_load((DEPLOY / "kubernetes/configmap.yaml").read_text())
    env = dict(config["data"])
    deployment = yaml.safe_load((DEPLOY / "kubernetes/deployment.yaml").read_text())
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    for var in container.get("env", []):
        source = var.get("valueFrom", {})
        if "fieldRef" in source:
            env[var["name"]] = POD_IP
        elif "secretKeyRef" in source:
            env[var["name"]] = SECRET_VALUE
        else:
            env[var["name"]] = var["value"]
    return env


def compose_env():
    compose = yaml.safe_load((DEPLOY / "docker-compose.yml").read_text())
    return {k: str(v) for k, v in compose["services"]["gateway"]["environment"].items()}


def dockerfile_env():
    text = (DEPLOY / "Dockerfile").read_text().replace("\\\n", " ")
    env = {}
    for line in text.splitlines():
        if line.startswith("ENV "):
            env.update(pair.split("=", 1) for pair in line[4:].split())
    return env


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


def check(gateway, name, env):
    settings = {k: v for k, v in env.items() if k.startswith("IGGY_KAFKA_")}
    if not settings:
        return f"{name}: sets no IGGY_KAFKA_* variable"
    for key in ("IGGY_KAFKA_BIND_ADDRESS", "IGGY_KAFKA_ADMIN_BIND_ADDRESS"):
        if key in settings and (problem := address_problem(settings[key])):
            return f"{name}: {key} {problem}"
    with tempfile.TemporaryDirectory() as tmp:
        password = Path(tmp) / "password"
        password.write_text("secret\n")
        run_env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            **settings,
            "IGGY_KAFKA_BIND_ADDRESS": "127.0.0.1:0",
            "IGGY_KAFKA_ADMIN_BIND_ADDRESS": "127.0.0.1:0",
            "IGGY_KAFKA_DATA_DIR": str(Path(tmp) / "data"),
            # Reaching for Iggy proves the settings were accepted; nothing listens here.
            "IGGY_KAFKA_BACKEND": "iggy",
            "IGGY_KAFKA_IGGY_ADDRESS": f"127.0.0.1:{free_port()}",
            "IGGY_KAFKA_IGGY_CONNECT_TIMEOUT_MS": "1",
            "RUST_LOG": "warn",
        }
        if "IGGY_KAFKA_IGGY_PASSWORD_FILE" in settings:
            run_env["IGGY_KAFKA_IGGY_PASSWORD_FILE"] = str(password)
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
    sources = {
        "kubernetes (ConfigMap and Deployment)": kubernetes_env(),
        "docker-compose.yml": compose_env(),
        "Dockerfile": dockerfile_env(),
    }
    problems = [p for name, env in sources.items() if (p := check(gateway, name, env))]
    for p in problems:
        print(f"FAIL {p}")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
