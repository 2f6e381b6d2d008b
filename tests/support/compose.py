"""The Docker Compose v2 CLI plugin, for checking docker-compose.yml without touching the system.

No Docker engine runs on the test machines, but `docker compose config` needs none: it parses,
interpolates and validates the file. The plugin is Debian sid's `docker-compose` package,
fetched with the same private sid apt configuration as the MySQL servers (tests/support/servers.py)
and unpacked with `dpkg -x` into the cache. A private DOCKER_CONFIG directory points the docker
CLI at it through `cli-plugins/docker-compose`; nothing is installed on the system.

    python -m tests.support.compose install      # prints the DOCKER_CONFIG directory
    DOCKER_CONFIG=$(python -m tests.support.compose install) docker compose config
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path

from tests.support.servers import CACHE, _run, _SidApt

PACKAGE = "docker-compose"
PLUGIN = Path("usr/libexec/docker/cli-plugins/docker-compose")


def root() -> Path:
    return CACHE / "compose"


def _install() -> Path:
    """The unpacked package (cached: a warm call does no network)."""
    prefix = root() / "prefix"
    if (prefix / PLUGIN).is_file():
        return prefix
    apt = _SidApt(CACHE / "apt-sid")
    apt.update()
    debs = root() / "debs"
    if not list(debs.glob(f"{PACKAGE}_*.deb")):
        apt.download([PACKAGE], debs)
    deb = max(debs.glob(f"{PACKAGE}_*.deb"))
    tmp = prefix.with_name(prefix.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    _run(["dpkg", "-x", str(deb), str(tmp)])
    if not (tmp / PLUGIN).is_file():
        raise RuntimeError(f"{deb.name} has no {PLUGIN}")
    shutil.rmtree(prefix, ignore_errors=True)
    tmp.rename(prefix)
    return prefix


def docker_config() -> Path:
    """A DOCKER_CONFIG directory whose only content is the compose plugin (a symlink into the cache)."""
    plugin = _install() / PLUGIN
    config = root() / "docker-config"
    link = config / "cli-plugins" / "docker-compose"
    link.parent.mkdir(parents=True, exist_ok=True)
    if not (link.is_symlink() and link.resolve() == plugin.resolve()):
        link.unlink(missing_ok=True)
        link.symlink_to(plugin)
    return config


def command() -> tuple[list[str], dict[str, str]]:
    """argv and environment that run Compose: `docker compose` through the private DOCKER_CONFIG
    when the docker CLI is there, else the plugin itself (the same binary runs standalone)."""
    config = docker_config()
    env = {**os.environ, "DOCKER_CONFIG": str(config)}
    if shutil.which("docker"):
        return ["docker", "compose"], env
    return [str(config / "cli-plugins" / "docker-compose")], env


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("action", choices=("install",))
    ap.parse_args(argv)
    t0 = time.time()
    config = docker_config()
    print(f"docker compose plugin in {config} ({time.time() - t0:.1f}s)", file=sys.stderr)
    print(config)
    return 0


if __name__ == "__main__":
    sys.exit(main())
