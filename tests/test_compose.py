"""docker-compose.yml and docker/Dockerfile, checked without a Docker engine.

`docker compose config` parses, validates and interpolates the file as `docker compose up` would;
the tests then hold the result to what the DAGs and plugins expect of the stack: the `binlake`
Variable, the connections it names, the services they point at, the warehouse in MinIO's bucket
through S3A (the jars in the images), the quality reports' volume.
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
    assert {"mysql-data", "minio-data", "postgres-data", "quality"} <= set(config["volumes"])


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


def test_airflow_init_makes_the_writers_pool(services):
    # The Spark tasks run in this pool (plugins/binlake_airflow/spark_submit.py): the scheduler
    # starts no task of a pool that does not exist. The command, as binlake airflow runs it.
    import shlex

    from binlake.local.airflow import POOL_COMMAND

    init = services["airflow-init"]
    argv = [*(init.get("entrypoint") or []), *(init.get("command") or [])]
    assert argv[:2] == ["bash", "-c"], argv
    commands = [shlex.split(part) for part in argv[2].split("&&")]
    assert commands == [["airflow", "db", "migrate"], ["airflow", *POOL_COMMAND]]


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
    # a bind mount over an editable install hid them, and containers ran the pure-Python paths.
    # The check imports the installed package: it runs where no copy of the sources is beside it
    # (in the directory the sources were copied into, `binlake` is that copy, without its
    # compiled modules, and the check failed unless the host's leaked into the context).
    for stage in ("binlake", "airflow"):
        runs = [args for instruction, args in _instructions(stage) if instruction == "RUN"]
        assert not any(re.search(r"pip install[^&]*\s-e\s", r) for r in runs), f"{stage} installs binlake editable"
        where = _runs_in(stage, "import binlake.binlog._rowdecode, binlake.archive._eventruns")
        assert where, f"the {stage} image never imports its compiled loops"
        sources = _copied_sources(stage)
        assert sources, stage
        for cwd in where:
            assert os.path.join(cwd, "binlake") not in sources, f"{stage}: the check runs in {cwd}, beside the sources"
    installed = "/opt/binlake"  # where the images copy binlake's sources and build it from
    for name, service in services.items():
        for v in service.get("volumes", ()):
            assert v["target"].rstrip("/") != installed, f"{name} mounts {v['source']} over {installed}"


def test_the_warehouse_is_a_minio_bucket_through_s3a(settings, env, services):
    # The tables are Delta tables in the bucket minio-init creates, written by the executors and the
    # driver through S3A with the AWS connection's endpoint (path-style) and keys: the settings the
    # tasks give spark-submit (binlake.spark.settings.delta) name the endpoint, never a key.
    from binlake.spark import settings as spark_settings

    warehouse = urlparse(settings["warehouse"])
    assert warehouse.scheme == "s3a" and warehouse.netloc == urlparse(settings["store"]).netloc
    conn = _conn(env, settings["aws_conn_id"])
    aws = {"AWS_ENDPOINT_URL": conn["extra"]["endpoint_url"], "AWS_ACCESS_KEY_ID": conn["login"],
           "AWS_SECRET_ACCESS_KEY": conn["password"], "AWS_DEFAULT_REGION": conn["extra"]["region_name"]}
    conf = spark_settings.delta(aws)
    assert conf["spark.hadoop.fs.s3a.endpoint"] == "http://minio:9000"
    assert conf["spark.hadoop.fs.s3a.path.style.access"] == "true"
    assert not any(conn["password"] in v or conn["login"] == v for v in conf.values())
    # no service mounts a warehouse any more: the executors write to MinIO
    for name in ("spark-worker", *AIRFLOW):
        assert not any("warehouse" in v["target"] for v in services[name].get("volumes", ())), name


def test_the_quality_reports_are_shared_by_the_airflow_services(settings, services):
    # the tasks write the reports, the API server serves them: the same volume at the Variable's path
    path = settings["quality"]
    for name in AIRFLOW:
        mounts = [v for v in services[name]["volumes"] if v["target"] == path]
        assert mounts, f"{name} does not mount the quality reports at {path}"
        assert mounts[0]["type"] == "volume" and mounts[0]["source"] == "quality"


def test_the_images_carry_the_jars_make_install_fetches():
    # One stage resolves them with binlake.spark.jars (Maven, from Maven Central, for the image's
    # pinned pyspark and delta-spark); the Spark and Airflow images copy that one directory to the
    # same path and check that its list resolves there: the executors' class path is the driver's.
    stages = _stages()
    assert "python -m binlake.spark.jars fetch" in stages["jars"] and "apt-get install" in stages["jars"]
    for name in ("spark", "airflow"):
        text = stages[name]
        assert "COPY --from=jars /opt/binlake-cache/jars /opt/binlake-cache/jars" in text, name
        assert re.search(r"BINLAKE_CACHE=/opt/binlake-cache\b", text), name
        assert "python -m binlake.spark.jars classpath" in text, name
    extra = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]["spark"]
    assert any(re.fullmatch(r"delta-spark==[\w.]+", d) for d in extra)  # one Delta release, pinned


def test_transactions_schedule_is_cron(env):
    require(importlib.util.find_spec("croniter") is not None, "croniter (installed with apache-airflow)")
    import datetime as dt

    import croniter
    schedule = env["BINLAKE_TRANSACTIONS_SCHEDULE"]
    assert len(schedule.split()) == 5
    assert croniter.croniter.is_valid(schedule)
    # a new stack has an interval with data within minutes, whenever it starts: the first interval
    # that begins after the start ends at most 20 minutes later (then the archive's next run, every
    # 10 minutes, reaches it)
    for minute in range(60):
        started = dt.datetime(2026, 11, 27, 10, minute, 30)
        begins = croniter.croniter(schedule, started).get_next(dt.datetime)
        ends = croniter.croniter(schedule, begins).get_next(dt.datetime)
        assert ends - started <= dt.timedelta(minutes=20), (minute, ends)


def test_minio_aborts_a_dead_archivers_uploads(services):
    # MinIO drops AbortIncompleteMultipartUpload lifecycle rules; its own setting does the same
    env = services["minio"]["environment"]
    assert env["MINIO_API_STALE_UPLOADS_EXPIRY"] == "24h" and env["MINIO_API_STALE_UPLOADS_CLEANUP_INTERVAL"] == "1h"


def test_the_stacks_archive_user_can_snapshot_the_schema(mysql_factory, tmp_path):
    # docker/mysql-init.sql on a real MySQL, as the image's entrypoint runs it (as root), and a
    # table of the workload's database: the archive user's capture of the schema holds the
    # table's columns as root's information_schema has them (before: no table, silently)
    from binlake.schema.capture import capture

    server = mysql_factory()
    with server.connect() as conn, conn.cursor() as cur:
        for sql in (REPO / "docker" / "mysql-init.sql").read_text().split(";"):
            sql = "\n".join(ln for ln in sql.splitlines() if not ln.strip().startswith("--")).strip()
            if sql:
                cur.execute(sql)
        cur.execute("CREATE TABLE shop.orders (id BIGINT PRIMARY KEY, state ENUM('new','paid'), total DECIMAL(12,2))")
        cur.execute("SELECT COLUMN_NAME, LOWER(COLUMN_TYPE) FROM information_schema.COLUMNS "
                    "WHERE TABLE_SCHEMA = 'shop' AND TABLE_NAME = 'orders' ORDER BY ORDINAL_POSITION")
        want = [(n, t.decode() if isinstance(t, bytes) else t) for n, t in cur.fetchall()]
    import pymysql

    conn = pymysql.connect(host="127.0.0.1", port=server.port, user="binlake", password="binlake")
    try:
        snapshot = capture(conn, "mysql")
    finally:
        conn.close()
    assert [(c.name, c.type) for c in snapshot.tables[("shop", "orders")].columns] == want


def test_scheduler_waits_for_its_dependencies(services):
    depends = services["airflow-scheduler"]["depends_on"]
    for name in ("postgres", "airflow-init", "mysql", "minio-init", "spark-master"):
        assert name in depends, f"airflow-scheduler does not wait for {name}"
    assert depends["airflow-init"]["condition"] == "service_completed_successfully"
    assert depends["minio-init"]["condition"] == "service_completed_successfully"


# -- (d) the Dockerfile ------------------------------------------------------------------------

def _stages() -> dict[str, str]:
    """Each named stage's instructions as text, comments left out (a comment never satisfies a
    check), continuation lines joined and global ARG defaults substituted."""
    lines = [ln for ln in DOCKERFILE.read_text().splitlines() if not ln.lstrip().startswith("#")]
    text = re.sub(r"\\\n", " ", "\n".join(lines) + "\n")
    head, *_ = re.split(r"(?im)^FROM\s", text, maxsplit=1)
    args = dict(re.findall(r"(?m)^ARG\s+(\w+)=(\S+)", head))

    def expand(s: str) -> str:
        return re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: args.get(m[1] or m[2], m[0]), s)

    stages = {}
    for m in re.finditer(r"(?im)^FROM\s+(\S+)\s+AS\s+(\S+)\s*$(.*?)(?=^FROM\s|\Z)", text, re.S):
        stages[m[2].lower()] = f"FROM {expand(m[1])}\n{expand(m[3])}"
    return stages


def _instructions(stage: str) -> list[tuple[str, str]]:
    """A stage's instructions, (INSTRUCTION, arguments), comments left out (as Docker reads them:
    a comment line inside a continued RUN is dropped too)."""
    lines = [ln for ln in _stage_text(stage).splitlines() if not ln.lstrip().startswith("#")]
    text = re.sub(r"\\\n", " ", "\n".join(lines))
    return [(m[1].upper(), m[2].strip()) for m in re.finditer(r"(?m)^\s*([A-Za-z]+)\s+(.*)$", text)]


def _stage_text(stage: str) -> str:
    """A named stage's lines as written (FROM to the next FROM), global ARG defaults substituted."""
    text = DOCKERFILE.read_text()
    head = re.split(r"(?im)^FROM\s", text, maxsplit=1)[0]
    args = dict(re.findall(r"(?m)^ARG\s+(\w+)=(\S+)", head))
    m = re.search(rf"(?ims)^FROM\s+\S+\s+AS\s+{re.escape(stage)}\s*$.*?(?=^FROM\s|\Z)", text)
    assert m, f"no stage {stage}"
    return re.sub(r"\$\{(\w+)\}", lambda v: args.get(v[1], v[0]), m[0])


def _runs_in(stage: str, command: str) -> list[str]:
    """The working directory of each shell command of the stage's RUN instructions that contains
    `command`: its WORKDIR, moved by the `cd` before it in the same RUN."""
    cwd, out = "/", []
    for instruction, args in _instructions(stage):
        if instruction == "WORKDIR":
            cwd = os.path.normpath(os.path.join(cwd, args))
        elif instruction == "RUN":
            here = cwd
            for part in re.split(r"&&|;", args):
                part = part.strip()
                if part.startswith("cd "):
                    here = os.path.normpath(os.path.join(here, part[3:].strip()))
                elif command in part:
                    out.append(here)
    return out


def _copied_sources(stage: str) -> set[str]:
    """Where the stage copies binlake's source tree (`COPY … binlake <dest>`)."""
    cwd, out = "/", set()
    for instruction, args in _instructions(stage):
        if instruction == "WORKDIR":
            cwd = os.path.normpath(os.path.join(cwd, args))
        elif instruction == "COPY" and "--from" not in args:
            *sources, dest = [a for a in args.split() if not a.startswith("--")]
            if "binlake" in sources:
                out.add(os.path.normpath(os.path.join(cwd, dest)))
    return out


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
    assert any(i == "RUN" and "offline_docs.py fetch --into /opt/docs_assets" in a
               for i, a in _instructions("docs-assets"))
    for name, dest in (("binlake", "./binlake/spark/docs_assets"),
                       ("airflow", "/opt/binlake/binlake/spark/docs_assets")):
        copy = rf"(--chown=\S+ )?--from=docs-assets /opt/docs_assets {re.escape(dest)}"
        assert any(i == "COPY" and re.fullmatch(copy, a) for i, a in _instructions(name)), name
        assert _runs_in(name, "offline_docs.available()"), name
    assert not [f for f in _build_context() if f.startswith("binlake/spark/docs_assets/")]


def _dockerignore_rule(pattern: str) -> re.Pattern:
    """A .dockerignore pattern as Docker matches it (moby's patternmatcher): relative to the
    context's root, `*` and `?` within one path element, `**` any number of them."""
    out, i = "", 0
    while i < len(pattern):
        if pattern.startswith("**", i):
            i += 2
            if pattern.startswith("/", i):
                out, i = out + "(?:.*/)?", i + 1
            else:
                out += ".*"
        elif pattern[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif pattern[i] == "?":
            out, i = out + "[^/]", i + 1
        else:
            out, i = out + re.escape(pattern[i]), i + 1
    return re.compile(out)


def _build_context(ignore: Path = REPO / "docker" / "Dockerfile.dockerignore") -> set[str]:
    """The files of this checkout that `docker compose build` sends as the images' build context:
    BuildKit reads `<Dockerfile>.dockerignore` beside the Dockerfile (the root `.dockerignore`
    only without one). The last pattern that matches a file or one of its directories decides."""
    rules = []
    for line in ignore.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keep = line.startswith("!")
            rules.append((keep, _dockerignore_rule(os.path.normpath(line.lstrip("!").strip()).lstrip("/"))))
    sent = set()
    for root, dirs, files in os.walk(REPO):
        dirs[:] = [d for d in dirs if d != ".git"]
        for f in files:
            rel = os.path.relpath(os.path.join(root, f), REPO)
            parts = rel.split(os.sep)
            ignored = False
            for keep, rule in rules:
                if any(rule.fullmatch("/".join(parts[:n])) for n in range(1, len(parts) + 1)):
                    ignored = not keep
            if not ignored:
                sent.add("/".join(parts))
    return sent


def test_the_build_context_holds_the_sources_and_no_build_output():
    # The file BuildKit reads for docker/Dockerfile, matched as Docker matches it against this
    # checkout, where `make install` built the compiled modules in place: they, caches and the
    # fetched docs assets stay out (a host's .so in the image hid that its own were not
    # importable); the sources the images build from are all in.
    sent = _build_context()
    built = [str(p.relative_to(REPO)) for p in (REPO / "binlake").rglob("*.so")]
    assert built, "make install builds binlake's compiled modules in place: none found"
    assert not set(built) & sent
    assert not [f for f in sent if f.endswith((".so", ".o", ".pyc")) or "__pycache__" in f or ".egg-info" in f]
    tracked = subprocess.run(["git", "ls-files", "binlake", "pyproject.toml", "README.md"], cwd=REPO,
                             capture_output=True, text=True, check=True).stdout.split()
    assert tracked and set(tracked) <= sent, sorted(set(tracked) - sent)[:5]
    assert not [f for f in sent if f.split("/")[0] not in ("binlake", "pyproject.toml", "README.md")]


def test_the_airflow_image_installs_with_airflows_constraints():
    # Airflow's documented install: its release's constraints file for the image's Python, on the
    # same pip install as Airflow, the providers and binlake; less only the pins the image makes
    # itself (pyspark, pyspark-client: the cluster's Spark release)
    runs = [a for i, a in _instructions("airflow") if i == "RUN" and "pip install" in a]
    (run,) = [r for r in runs if "apache-airflow==" in r]
    fetched = re.search(r"curl -fsSL \"(\S+)\"\s*\|(.*?)>\s*(\S+)", run)
    assert fetched, run
    url, filtered, constraints = fetched.groups()
    airflow = re.search(r"FROM apache/airflow:([\w.]+)-python", _stages()["airflow"])[1]  # the image's release
    assert url.endswith(f"/constraints-{airflow}/constraints-${{python_version}}.txt"), url
    assert "python_version=\"$(python -c" in run
    install = run[run.index("pip install"):]
    assert f"--constraint {constraints}" in install
    dropped = set(re.findall(r"\^\((.*?)\)==", filtered)[0].split("|"))
    assert dropped == {"pyspark", "pyspark-client"}, dropped
    for name in ("apache-airflow-providers-apache-spark", "apache-airflow-providers-amazon",
                 "apache-airflow-providers-mysql", "/opt/binlake[spark,quality]"):
        assert name in install, name


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
