"""docker-compose.yml and docker/Dockerfile, checked without a Docker engine.

`docker compose config` parses, validates and interpolates the file as `docker compose up` would;
the tests then hold the result to what the DAGs and plugins expect of the stack: the `binlake`
Variable, the connections it names, the services they point at, the shared warehouse volume.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from urllib.parse import urlparse

import pytest

from tests.conftest import require
from tests.support import compose

REPO = Path(__file__).resolve().parents[1]
DOCKERFILE = REPO / "docker" / "Dockerfile"
SERVICES = ("mysql", "workload", "minio", "minio-init", "spark-master", "spark-worker", "postgres",
            "airflow-init", "airflow-apiserver", "airflow-scheduler", "airflow-dag-processor", "airflow-triggerer")
AIRFLOW = tuple(s for s in SERVICES if s.startswith("airflow-"))
CONN_TYPES = {"mysql_conn_id": "mysql", "aws_conn_id": "aws", "spark_conn_id": "spark"}


@pytest.fixture(scope="module")
def compose_run() -> subprocess.CompletedProcess:
    try:
        argv, env = compose.command()
    except Exception as e:  # noqa: BLE001 - reported as the reason
        require(False, f"the Docker Compose plugin ({e})")
    # Only what Compose needs: values set in the caller's environment would change the interpolation.
    env = {k: v for k, v in env.items() if k in ("PATH", "HOME", "DOCKER_CONFIG")}
    return subprocess.run([*argv, "--project-directory", str(REPO), "-f", str(REPO / "docker-compose.yml"),
                           "config", "--format", "json"], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=120)


@pytest.fixture(scope="module")
def config(compose_run) -> dict:
    if compose_run.returncode != 0:
        pytest.fail(f"docker compose config failed:\n{compose_run.stderr}")
    return json.loads(compose_run.stdout)


@pytest.fixture(scope="module")
def services(config) -> dict:
    return config["services"]


@pytest.fixture(scope="module")
def env(services) -> dict[str, str]:
    return services["airflow-scheduler"]["environment"]


@pytest.fixture(scope="module")
def settings(env) -> dict:
    return json.loads(env["AIRFLOW_VAR_BINLAKE"])


def _flags(argv: list[str]) -> dict[str, str]:
    """`--name=value` / `--name value` arguments, names with dashes."""
    out: dict[str, str] = {}
    for i, arg in enumerate(argv):
        if not arg.startswith("--"):
            continue
        if "=" in arg:
            name, value = arg[2:].split("=", 1)
        else:
            name = arg[2:]
            value = argv[i + 1] if i + 1 < len(argv) and not argv[i + 1].startswith("--") else ""
        out[name.replace("_", "-")] = value
    return out


def _size(value: str) -> int:
    units = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    m = re.fullmatch(r"(\d+)([kmg]?)", value.strip().lower())
    assert m, f"not a size: {value!r}"
    return int(m[1]) * units[m[2]]


def _repo_mount(service: dict) -> str:
    """Where a service mounts the repository (a bind mount of its root)."""
    for v in service.get("volumes", ()):
        if v["type"] == "bind" and Path(v["source"]).resolve() == REPO:
            return v["target"]
    raise AssertionError(f"the repository is not mounted in {service.get('image')}")


def _conn(env: dict[str, str], conn_id: str) -> dict:
    name = f"AIRFLOW_CONN_{conn_id.upper()}"
    assert name in env, f"the binlake Variable names connection {conn_id!r}, but {name} is not set"
    value = json.loads(env[name])
    assert isinstance(value, dict), f"{name} is not a JSON connection"
    return value


# -- (a) the file is valid ---------------------------------------------------------------------

def test_compose_config_succeeds(compose_run):
    assert compose_run.returncode == 0, compose_run.stderr
    assert json.loads(compose_run.stdout)["services"]


# -- (b) services, MySQL, ports ----------------------------------------------------------------

def test_services(services, config):
    missing = sorted(set(SERVICES) - set(services))
    assert not missing, f"services missing: {missing}"
    assert {"mysql-data", "minio-data", "postgres-data", "warehouse"} <= set(config["volumes"])


def test_mysql_writes_what_binlake_reads(services):
    mysql = services["mysql"]
    assert mysql["image"] == "mysql:8.4"  # README: the stack "starts MySQL 8.4"
    flags = {k: v.upper() for k, v in _flags(mysql["command"]).items()}
    assert flags.get("gtid-mode") == "ON"
    assert flags.get("enforce-gtid-consistency") == "ON"
    assert flags.get("binlog-format") == "ROW"
    assert flags.get("binlog-row-metadata") == "FULL"
    assert "log-bin" in flags and "server-id" in flags
    # Small files rotate often: the archive has something to copy at every run.
    assert _size(flags["max-binlog-size"]) <= 16 << 20


def test_published_ports_bind_loopback(services):
    published = []
    for name, service in services.items():
        for port in service.get("ports", ()):
            published.append(name)
            assert port.get("host_ip") == "127.0.0.1", f"{name} publishes {port} beyond 127.0.0.1"
    assert {"mysql", "minio", "spark-master", "airflow-apiserver"} <= set(published)
    ui = [p for p in services["airflow-apiserver"]["ports"] if p["target"] == 8080]
    assert ui and ui[0]["published"] == "8081"  # README: "Airflow: http://127.0.0.1:8081"


def test_bind_mounts_exist(services):
    for name, service in services.items():
        for v in service.get("volumes", ()):
            if v["type"] == "bind":
                assert Path(v["source"]).exists(), f"{name} mounts {v['source']}, which does not exist"


# -- (c) the Airflow services and what the DAGs expect ----------------------------------------

def test_airflow_services_share_one_environment(services, env):
    for name in AIRFLOW:
        assert services[name]["environment"] == env, f"{name} differs from airflow-scheduler"
        assert services[name]["build"]["target"] == "airflow"
    assert env["AIRFLOW__CORE__EXECUTOR"] == "LocalExecutor"
    assert urlparse(env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"]).hostname == "postgres"
    execution = urlparse(env["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"])
    assert execution.hostname == "airflow-apiserver" and execution.port == 8080
    assert execution.path.rstrip("/") == "/execution"


def test_variable_is_valid_settings(settings):
    """The Variable parses with the plugin's own reader (no unknown keys, sources well formed)."""
    path = REPO / "plugins" / "binlake_airflow" / "settings.py"
    name = "_compose_binlake_airflow_settings"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    try:
        spec.loader.exec_module(module)
        parsed = module.parse(settings)
    finally:
        del sys.modules[name]
    assert parsed.sources and all(s.mysql_conn_id or s.url for s in parsed.sources)


def test_connections_named_by_the_variable(settings, env, services):
    conn_ids = {("aws_conn_id", settings.get("aws_conn_id")),
                ("spark_conn_id", settings.get("spark_conn_id", "spark_default"))}
    conn_ids |= {("mysql_conn_id", s["mysql_conn_id"]) for s in settings["sources"] if s.get("mysql_conn_id")}
    assert {key for key, _ in conn_ids} == set(CONN_TYPES)
    for key, conn_id in conn_ids:
        assert conn_id, f"the Variable has no {key}"
        conn = _conn(env, conn_id)
        assert conn.get("conn_type") == CONN_TYPES[key], f"{conn_id}: conn_type {conn.get('conn_type')!r}"
        if key == "mysql_conn_id":
            assert conn["host"] in services
            assert int(conn.get("port", 3306)) == 3306
            assert conn.get("login") and conn.get("password")


def test_s3_connection_points_at_minio(settings, env, services):
    conn = _conn(env, settings["aws_conn_id"])
    endpoint = urlparse(conn["extra"]["endpoint_url"])
    minio = services["minio"]
    api_port = int(_flags(minio["command"]).get("address", ":9000").rsplit(":", 1)[1])
    console_port = int(_flags(minio["command"])["console-address"].rsplit(":", 1)[1])
    assert endpoint.hostname == "minio" and endpoint.port == api_port != console_port
    assert api_port in {p["target"] for p in minio["ports"]}
    assert conn.get("login") == minio["environment"]["MINIO_ROOT_USER"]
    assert conn.get("password") == minio["environment"]["MINIO_ROOT_PASSWORD"]


def test_store_bucket_is_created(settings, services):
    store = urlparse(settings["store"])
    assert store.scheme == "s3"
    init = services["minio-init"]
    script = " ".join([*(init.get("entrypoint") or []), *(init.get("command") or [])])
    assert "mc alias set" in script
    created = re.findall(r"mc mb (?:--\S+ )*\S+?/([\w.-]+)", script)
    assert store.netloc in created, f"minio-init creates {created}, the store is in {store.netloc!r}"
    assert init["depends_on"]["minio"]["condition"] == "service_healthy"


def test_spark_connection_points_at_master(settings, env, services):
    conn = _conn(env, settings.get("spark_conn_id", "spark_default"))
    master = services["spark-master"]
    port = int(_flags(master["command"]).get("port", "7077"))
    assert urlparse(conn["host"]).scheme == "spark" and urlparse(conn["host"]).hostname == "spark-master"
    assert int(conn["port"]) == port == 7077
    assert f"spark://spark-master:{port}" in services["spark-worker"]["command"]
    # Executors connect back to the driver, which spark-submit runs in the scheduler.
    conf = settings.get("spark_conf", {})
    assert conf.get("spark.driver.host") in ("airflow-scheduler", services["airflow-scheduler"].get("hostname"))


def test_folders_are_in_the_repository_mount(env, services):
    for name in AIRFLOW:
        target = _repo_mount(services[name])
        for key in ("AIRFLOW__CORE__DAGS_FOLDER", "AIRFLOW__CORE__PLUGINS_FOLDER"):
            folder = env[key]
            assert folder.startswith(target.rstrip("/") + "/"), f"{key}={folder} is outside {target}"
            assert (REPO / os.path.relpath(folder, target)).is_dir()
    for folder in ("dags", "plugins", "spark_jobs", "expectations"):
        assert (REPO / folder).is_dir(), f"the repository has no {folder}/"
    # the suites the validate task loads are the mounted repository's
    expectations = env["BINLAKE_EXPECTATIONS"]
    assert os.path.relpath(expectations, _repo_mount(services["airflow-scheduler"])) == "expectations"


def test_the_compiled_loops_are_not_hidden(services):
    # binlake is installed as a package in every image, its compiled loops checked at build time;
    # a bind mount over an editable install hid them, and containers ran the pure-Python paths
    for stage in ("binlake", "airflow"):
        text = _stages()[stage]
        assert "-e " not in text and '-e "' not in text, f"the {stage} image installs binlake editable"
        assert "import binlake.binlog._rowdecode, binlake.archive._eventruns" in text, stage
    installed = "/opt/binlake"  # where the images copy binlake's sources and build it from
    for name, service in services.items():
        for v in service.get("volumes", ()):
            assert v["target"].rstrip("/") != installed, f"{name} mounts {v['source']} over {installed}"


def test_warehouse_volume_is_shared(settings, services):
    path = settings["warehouse"]
    for name in ("airflow-scheduler", "spark-worker"):
        mounts = [v for v in services[name]["volumes"] if v["target"] == path]
        assert mounts, f"{name} does not mount the warehouse at {path}"
        assert mounts[0]["type"] == "volume" and mounts[0]["source"] == "warehouse"


def test_transactions_schedule_is_cron(env):
    require(importlib.util.find_spec("croniter") is not None, "croniter (installed with apache-airflow)")
    import croniter
    schedule = env["BINLAKE_TRANSACTIONS_SCHEDULE"]
    assert len(schedule.split()) == 5
    assert croniter.croniter.is_valid(schedule)


def test_scheduler_waits_for_its_dependencies(services):
    depends = services["airflow-scheduler"]["depends_on"]
    for name in ("postgres", "airflow-init", "mysql", "minio-init", "spark-master"):
        assert name in depends, f"airflow-scheduler does not wait for {name}"
    assert depends["airflow-init"]["condition"] == "service_completed_successfully"
    assert depends["minio-init"]["condition"] == "service_completed_successfully"


# -- (d) the Dockerfile ------------------------------------------------------------------------

def _stages() -> dict[str, str]:
    """Each named stage's text, with continuation lines joined and global ARG defaults substituted."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    head, *_ = re.split(r"(?im)^FROM\s", text, maxsplit=1)
    args = dict(re.findall(r"(?m)^ARG\s+(\w+)=(\S+)", head))

    def expand(s: str) -> str:
        return re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: args.get(m[1] or m[2], m[0]), s)

    stages = {}
    for m in re.finditer(r"(?im)^FROM\s+(\S+)\s+AS\s+(\S+)\s*$(.*?)(?=^FROM\s|\Z)", text, re.S):
        stages[m[2].lower()] = f"FROM {expand(m[1])}\n{expand(m[3])}"
    return stages


def test_dockerfile_targets(services):
    stages = _stages()
    assert {"binlake", "spark", "airflow"} <= set(stages)
    for name, service in services.items():
        if "build" in service:
            assert service["build"]["target"] in stages, f"{name} builds a missing target"
            assert Path(service["build"]["context"]).resolve() == REPO


def test_one_pyspark_version():
    """The driver (Airflow) and the executors (spark, from binlake) run the same pyspark, and
    pyspark-client, which installs over pyspark's files, is the very same version."""
    stages = _stages()
    airflow = stages["airflow"]
    pyspark = re.findall(r"\bpyspark==([\w.]+)", airflow)
    client = re.findall(r"\bpyspark-client==([\w.]+)", airflow)
    assert len(pyspark) == 1 and len(client) == 1, "the airflow target must pin pyspark and pyspark-client"
    assert pyspark == client
    assert re.findall(r"\bpyspark==([\w.]+)", stages["binlake"]) == pyspark
    extra = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]["airflow"]
    assert f"pyspark=={pyspark[0]}" in extra and f"pyspark-client=={pyspark[0]}" in extra
    # Python workers must have the driver's minor version.
    python = re.search(r"FROM python:(\d+\.\d+)", stages["binlake"])[1]
    assert re.search(r"FROM apache/airflow:([\w.]+)-python(\d+\.\d+)", airflow)[2] == python


def test_the_images_that_validate_ship_the_data_docs_assets():
    """Validation runs in the Airflow image (and binlake's, for the CLI): both carry the data
    docs' CSS and JavaScript (binlake/local/offline_docs.py), fetched by the image's own stage,
    never the build host's copy (.dockerignore)."""
    stages = _stages()
    assert "offline_docs.py fetch --into /opt/docs_assets" in stages["docs-assets"]
    for name, dest in (("binlake", "./binlake/spark/docs_assets"),
                       ("airflow", "/opt/binlake/binlake/spark/docs_assets")):
        assert re.search(rf"COPY (--chown=\S+ )?--from=docs-assets /opt/docs_assets {re.escape(dest)}\n",
                         stages[name]), name
        assert "offline_docs.available()" in stages[name], name
    ignored = (REPO / ".dockerignore").read_text().split()
    assert {".venv", "binlake/spark/docs_assets", "binlake/**/*.so"} <= set(ignored)


def test_airflow_image_keeps_its_airflow():
    airflow = _stages()["airflow"]
    base = re.search(r"FROM apache/airflow:([\w.]+)-python", airflow)[1]
    assert re.findall(r"\bapache-airflow==([\w.]+)", airflow) == [base]


def test_pulled_images_are_pinned(services):
    # An image the stack pulls (no build of its own) names a release, never an implicit `latest`:
    # minio/minio stopped being served, and an unpinned name follows whatever a registry does next.
    pulled = {name: s["image"] for name, s in services.items() if "build" not in s}
    assert pulled, services
    for name, image in pulled.items():
        tag = image.rsplit("/", 1)[-1].partition(":")[2]
        assert tag and tag != "latest", f"{name}: {image} is not pinned"
    assert not any(image.startswith("minio/") for image in pulled.values())  # no longer on Docker Hub
