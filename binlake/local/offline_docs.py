"""The data docs' CSS, JavaScript and fonts shipped with the site, not fetched from CDNs.

GX's page templates load bootstrap, jQuery, bootstrap-table, Font Awesome and Vega from public
CDNs: without a network the index lists no validations (bootstrap-table draws the list) and the
pages are unstyled. `fetch` takes the very files those URLs serve from the npm registry, at the
versions the templates name, into binlake's package data (`make install`, the Docker images);
`localize` copies them into a site and points its pages at them.

Standalone too, for the Docker build: `python offline_docs.py fetch --into DIR`.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Iterable
from functools import partial
from pathlib import Path

log = logging.getLogger(__name__)

# Each URL of GX 1.x's templates (great_expectations/render/view/templates) -> the npm package
# and file it serves. A URL a newer GX adds is reported by localize(), never silently left.
ASSETS: dict[str, tuple[str, str]] = {
    "https://maxcdn.bootstrapcdn.com/bootstrap/4.3.1/css/bootstrap.min.css":
        ("bootstrap@4.3.1", "dist/css/bootstrap.min.css"),
    "https://stackpath.bootstrapcdn.com/bootstrap/4.3.1/js/bootstrap.min.js":
        ("bootstrap@4.3.1", "dist/js/bootstrap.min.js"),
    "https://code.jquery.com/jquery-3.7.1.min.js": ("jquery@3.7.1", "dist/jquery.min.js"),
    "https://cdnjs.cloudflare.com/ajax/libs/popper.js/1.12.9/umd/popper.min.js":
        ("popper.js@1.12.9", "dist/umd/popper.min.js"),
    "https://unpkg.com/bootstrap-table@1.19.1/dist/bootstrap-table.min.css":
        ("bootstrap-table@1.19.1", "dist/bootstrap-table.min.css"),
    "https://unpkg.com/bootstrap-table@1.19.1/dist/bootstrap-table.min.js":
        ("bootstrap-table@1.19.1", "dist/bootstrap-table.min.js"),
    "https://unpkg.com/bootstrap-table@1.19.1/dist/extensions/filter-control/bootstrap-table-filter-control.min.js":
        ("bootstrap-table@1.19.1", "dist/extensions/filter-control/bootstrap-table-filter-control.min.js"),
    "https://unpkg.com/bootstrap-table@1.19.0/dist/extensions/filter-control/bootstrap-table-filter-control.css":
        ("bootstrap-table@1.19.0", "dist/extensions/filter-control/bootstrap-table-filter-control.css"),
    "https://unpkg.com/bootstrap-table@1.19.0/dist/extensions/filter-control/bootstrap-table-filter-control.min.css":
        ("bootstrap-table@1.19.0", "dist/extensions/filter-control/bootstrap-table-filter-control.min.css"),
    "https://cdnjs.cloudflare.com/ajax/libs/bootstrap-datepicker/1.9.0/css/bootstrap-datepicker.min.css":
        ("bootstrap-datepicker@1.9.0", "dist/css/bootstrap-datepicker.min.css"),
    "https://cdnjs.cloudflare.com/ajax/libs/bootstrap-datepicker/1.9.0/js/bootstrap-datepicker.min.js":
        ("bootstrap-datepicker@1.9.0", "dist/js/bootstrap-datepicker.min.js"),
    "https://cdn.jsdelivr.net/npm/@forevolve/bootstrap-dark@1.1.0/dist/css/bootstrap-prefers-dark.css":
        ("@forevolve/bootstrap-dark@1.1.0", "dist/css/bootstrap-prefers-dark.css"),
    "https://cdnjs.cloudflare.com/ajax/libs/font-awesome/6.6.0/css/all.min.css":
        ("@fortawesome/fontawesome-free@6.6.0", "css/all.min.css"),
    # "@5" and "@6": the newest 5.x / 6.x when this list was written (what the CDN served then)
    "https://cdn.jsdelivr.net/npm/vega@5": ("vega@5.33.1", "build/vega.min.js"),
    "https://cdn.jsdelivr.net/npm/vega-lite@5": ("vega-lite@5.23.0", "build/vega-lite.min.js"),
    "https://cdn.jsdelivr.net/npm/vega-embed@6": ("vega-embed@6.29.0", "build/vega-embed.min.js"),
}
# GX's logos: loaded from GX's bucket (with the context's id, a usage ping) by an <img> and by the
# dark theme's CSS. Offline pages show the name instead.
LOGOS = "https://great-expectations-web-assets.s3.us-east-2.amazonaws.com/"
# Whole directories a file above refers to (Font Awesome's CSS loads ../webfonts/*).
DIRECTORIES: dict[str, tuple[str, ...]] = {"@fortawesome/fontawesome-free@6.6.0": ("webfonts",)}

# Package data of binlake.spark, whose validation copies them into every site it writes; filled by fetch()
HERE = Path(__file__).resolve().parents[1] / "spark" / "docs_assets"
MANIFEST = "manifest.json"
VENDOR = Path("static") / "vendor"  # in a site
_TAG = re.compile(r"<(?:script|link|img)\b[^>]*>", re.I)
_ALT = re.compile(r"""\balt\s*=\s*["']([^"']*)["']""", re.I)
_LOGO_CSS = re.compile(r"""url\(\s*["']?""" + re.escape(LOGOS) + r"""[^)]*\)""")
_REMOTE = re.compile(r"""(?:src|href)\s*=\s*["'](https?://[^"']+)["']""", re.I)
_PINNING = re.compile(r"""\s+(?:integrity|crossorigin)\s*=\s*["'][^"']*["']""", re.I)


def _files() -> dict[str, list[str]]:
    """package@version -> the paths (files, then directories) taken from it."""
    out: dict[str, list[str]] = {}
    for package, path in ASSETS.values():
        out.setdefault(package, [])
        if path not in out[package]:
            out[package].append(path)
    for package, dirs in DIRECTORIES.items():
        out[package] += list(dirs)
    return out


def fetch(into: Path = HERE, cache: Path | None = None) -> Path:
    """Every asset from the npm registry (`npm pack`, which checks each tarball against the
    registry's integrity hash) into `into`, with a manifest; tarballs kept in `cache`."""
    if shutil.which("npm") is None:
        raise RuntimeError("fetching the data docs' assets needs npm (Debian: apt-get install npm)")
    cache = cache or Path(tempfile.mkdtemp(prefix="binlake-npm-"))
    cache.mkdir(parents=True, exist_ok=True)
    tmp = into.with_name(into.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    written: list[str] = []
    for package, paths in _files().items():
        tarball = _pack(package, cache)
        with tarfile.open(tarball) as tar:
            for member in tar.getmembers():
                rel = member.name.removeprefix("package/")
                if not member.isfile() or not any(rel == p or rel.startswith(p + "/") for p in paths):
                    continue
                dest = tmp / "vendor" / package / rel
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_bytes(tar.extractfile(member).read())  # type: ignore[union-attr]
                written.append(f"{package}/{rel}")
        missing = [p for p in paths if not any(w == f"{package}/{p}" or w.startswith(f"{package}/{p}/")
                                               for w in written)]
        if missing:
            raise RuntimeError(f"{tarball.name} has no {', '.join(missing)}")
    (tmp / MANIFEST).write_text(json.dumps({"assets": ASSETS, "files": sorted(written)}, indent=1))
    shutil.rmtree(into, ignore_errors=True)
    tmp.rename(into)  # complete or absent: never a half-filled directory
    log.info("data docs assets: %d files of %d packages in %s", len(written), len(_files()), into)
    return into


def _pack(package: str, cache: Path) -> Path:
    name, _, version = package.rpartition("@")
    tarball = cache / f"{name.lstrip('@').replace('/', '-')}-{version}.tgz"
    if not tarball.is_file():
        subprocess.run(["npm", "pack", package, "--silent", "--pack-destination", str(cache)],
                       check=True, stdout=subprocess.DEVNULL, env={**os.environ, "npm_config_loglevel": "error"})
    if not tarball.is_file():
        raise RuntimeError(f"npm pack {package} wrote no {tarball}")
    return tarball


def available(assets: Path = HERE) -> bool:
    try:
        manifest = json.loads((assets / MANIFEST).read_text())
    except (OSError, ValueError):
        return False
    return manifest.get("assets") == {k: list(v) for k, v in ASSETS.items()}


def localize(site: Path, assets: Path = HERE, pages: Iterable[Path] | None = None) -> list[str]:
    """Copy the assets into `site` and point its pages at them (pages already pointed are left
    as they are): `pages`, those a build just wrote (the others were pointed when they were
    written: a site holds a page per stored result, and reading them all is a cost that grows with
    every run), else every page of the site. Returns the remote URLs still loaded by a page: none
    when all is well."""
    if not available(assets):
        log.warning("binlake was installed without the data docs' assets (make install fetches them): "
                    "the pages of %s load their CSS and JavaScript from CDNs", site)
        return sorted(ASSETS)
    vendor = site / VENDOR
    stamp = vendor / MANIFEST
    if not stamp.is_file() or stamp.read_bytes() != (assets / MANIFEST).read_bytes():
        shutil.copytree(assets / "vendor", vendor, dirs_exist_ok=True)
        shutil.copyfile(assets / MANIFEST, stamp)
    remote: set[str] = set()
    pointed = 0
    written = site.rglob("*.html") if pages is None else pages
    for page in [*written, *(site / "static" / "styles").glob("*.css")]:
        text = page.read_text(encoding="utf-8")
        if "://" not in text:
            continue
        new = _LOGO_CSS.sub("none", _TAG.sub(partial(_point, where=page.parent, vendor=vendor), text))
        remote.update(u for tag in _TAG.findall(new) for u in _REMOTE.findall(tag))
        if new != text:
            page.write_text(new, encoding="utf-8")
            pointed += 1
    log.info("data docs: %d page(s) pointed at the site's own assets", pointed)
    if remote:
        log.warning("data docs pages still load %s: not in binlake's list (binlake.local.offline_docs.ASSETS)",
                    ", ".join(sorted(remote)))
    return sorted(remote)


def _point(match: re.Match, where: Path, vendor: Path) -> str:
    tag = match.group(0)
    for url in _REMOTE.findall(tag):
        if url.startswith(LOGOS):
            alt = _ALT.search(tag)
            return f'<span class="h5">{alt.group(1) if alt else ""}</span>'
        if url in ASSETS:
            package, path = ASSETS[url]
            tag = tag.replace(url, os.path.relpath(vendor / package / path, where))
            tag = _PINNING.sub("", tag)  # the hashes pinned the CDN's copy; the file is ours now
    return tag


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["fetch"])
    parser.add_argument("--into", type=Path, default=HERE)
    parser.add_argument("--cache", type=Path, default=None, help="keep the npm tarballs here")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if args.command == "fetch":
        fetch(args.into, args.cache)


if __name__ == "__main__":
    main()
