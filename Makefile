# binlake: the two set-up commands of README.md, and the pieces they are made of.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
ASSETS := binlake/spark/docs_assets/manifest.json

.PHONY: airflow demo test test-fast install jars servers java browser compose lint bench clean

demo: install  ## the whole pipeline on the bundled sample binlogs
	$(BIN)/binlake demo

# CONFIG=binlake.json (the Variable; else the demo's samples), HOME_DIR=… (its AIRFLOW_HOME), PORT=… (the UI's)
airflow: install java  ## a local Airflow for binlake (127.0.0.1:8080, the demo's samples unless CONFIG=binlake.json), until Ctrl-C
	$(BIN)/binlake airflow $(if $(CONFIG),--config $(CONFIG)) $(if $(HOME_DIR),--home $(HOME_DIR)) $(if $(PORT),--port $(PORT))

# Two workers by default (CI's two cores): a test module runs whole on one worker, with its own
# servers; every worker starts its own session servers, Spark and Airflow. The modules go out in
# the order tests/support/module_order.py gives them (longest first), not xdist's (most tests first).
TEST_WORKERS ?= 2
# More pytest arguments, e.g. --record-module-durations after a change to a slow module (DEVELOPERS.md).
TEST_ARGS ?=

test: install servers java browser compose lint  ## lint, then every test against real servers
	$(BIN)/python -m pytest -q -rfEs --durations=40 -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder $(TEST_ARGS)

# The tests that need no server, JVM, Airflow or browser (markers from their fixtures: tests/conftest.py).
test-fast: install lint  ## the developer's loop, in about a minute
	$(BIN)/python -m pytest -q -rfEs -m "not (mysql or mariadb or spark or airflow or browser)"

install: $(STAMP) $(ASSETS) jars

# Delta Lake's and the S3A connector's jars for pyspark's Spark and Hadoop, resolved by Maven from
# Maven Central into $${BINLAKE_CACHE:-~/.cache/binlake} once; offline after that (binlake/spark/jars.py).
# Then the archive of the classes a local session loads, which every later JVM maps (binlake/spark/classes.py).
jars: $(STAMP)
	$(BIN)/python -m binlake.spark.jars fetch >/dev/null
	$(BIN)/python -m binlake.spark.classes >/dev/null

# The data docs' CSS, JavaScript and fonts from the npm registry, tarballs cached in .cache/npm.
$(ASSETS): binlake/local/offline_docs.py $(STAMP)
	$(BIN)/python -m binlake.local.offline_docs fetch --cache .cache/npm

$(STAMP): pyproject.toml
	PYTHON=$(PYTHON) bash scripts/install-build-deps.sh
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev,airflow]'
	touch $(STAMP)

browser:  ## Debian's chromium for the browser tests
	bash scripts/install-browser.sh

compose:  ## the Docker Compose plugin (Debian sid, cached) for `docker compose config` in the tests
	bash scripts/install-compose.sh >/dev/null

java:  ## Spark's Java 17+, checked
	bash scripts/check-java.sh

servers: install  ## MySQL 9.x (Debian sid, own prefix) and MariaDB 10.11, cached
	bash scripts/install-servers.sh

lint: install  ## ruff over everything, mypy over the library, its import contracts (pyproject.toml)
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/lint-imports

bench: install servers java
	$(BIN)/python bench/scan.py
	$(BIN)/python bench/scan.py --rows-query
	$(BIN)/python bench/archive.py
	$(BIN)/python bench/assemble.py
	$(BIN)/python bench/assemble.py --shape mix --size-mib 64
	$(BIN)/python bench/assemble.py --shape mix-shipped --size-mib 64
	$(BIN)/python bench/memory.py
	$(BIN)/python bench/schema.py
	$(BIN)/python bench/shapes.py
	$(BIN)/python bench/interval.py
	$(BIN)/python bench/classes.py
	$(BIN)/python bench/manifests.py
	$(BIN)/python bench/hourly.py
	$(BIN)/python bench/delta_cost.py
	$(BIN)/python bench/snapshot.py
	$(BIN)/python bench/tables.py
	$(BIN)/python bench/tables_shapes.py
	$(BIN)/python bench/samples.py
	$(BIN)/python bench/quality_store.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
