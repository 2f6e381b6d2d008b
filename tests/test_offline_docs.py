"""The data docs' assets (binlake/local/offline_docs.py): every URL of GX's own templates is one
binlake ships, and a site's pages are pointed at the site's copy at any depth.
(Opened in Chromium with the network refused: tests/test_validate.py::test_data_docs_in_chromium.)"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import great_expectations

from binlake.local import offline_docs

TEMPLATES = Path(great_expectations.__file__).parent / "render" / "view" / "templates"


def test_every_remote_asset_of_gx_templates_is_shipped():
    # the oracle: the URLs GX's installed templates load (script src, link href), read from them
    loaded = {u for t in TEMPLATES.glob("*.j2") for tag in re.findall(r"<(?:script|link)\b[^>]*>", t.read_text())
              for u in re.findall(r"""(?:src|href)=["'](https?://[^"']+)["']""", tag)}
    assert loaded and loaded <= set(offline_docs.ASSETS), loaded - set(offline_docs.ASSETS)
    assert offline_docs.available(), "make install fetches them"
    for package, path in offline_docs.ASSETS.values():
        assert (offline_docs.HERE / "vendor" / package / path).stat().st_size > 100, (package, path)


def test_localize_points_each_page_at_the_sites_copy(tmp_path):
    site = tmp_path / "site"
    jquery = "https://code.jquery.com/jquery-3.7.1.min.js"
    fa = "https://cdnjs.cloudflare.com/ajax/libs/font-awesome/6.6.0/css/all.min.css"
    unknown = "https://cdn.example.invalid/new-lib.js"
    page = (f'<link rel="stylesheet" href="{fa}">\n<script src="{jquery}" integrity="sha384-x" '
            f'crossorigin="anonymous"></script>\n<script src="{unknown}"></script>\n'
            f'<img src="{offline_docs.LOGOS}logo-long.png?d=1&dataContextId=abc" alt="Great Expectations"/>\n'
            f'<a href="https://docs.greatexpectations.io">docs</a>')
    for rel in ("index.html", "validations/s/run/time/batch.html"):
        (site / rel).parent.mkdir(parents=True, exist_ok=True)
        (site / rel).write_text(page)
    assert offline_docs.localize(site) == [unknown]  # the one URL binlake does not know, said
    deep = (site / "validations/s/run/time/batch.html").read_text()
    assert 'src="../../../../static/vendor/jquery@3.7.1/dist/jquery.min.js"></script>' in deep
    assert 'href="../../../../static/vendor/@fortawesome/fontawesome-free@6.6.0/css/all.min.css"' in deep
    assert "integrity" not in deep and "crossorigin" not in deep
    assert "dataContextId" not in deep and '<span class="h5">Great Expectations</span>' in deep
    assert '<a href="https://docs.greatexpectations.io">' in deep  # links stay links
    top = (site / "index.html").read_text()
    assert 'src="static/vendor/jquery@3.7.1/dist/jquery.min.js"' in top
    # the copy is the fetched file, byte for byte, and the fonts its CSS loads are beside it
    shipped = offline_docs.HERE / "vendor" / "jquery@3.7.1" / "dist" / "jquery.min.js"
    copied = site / "static" / "vendor" / "jquery@3.7.1" / "dist" / "jquery.min.js"
    assert hashlib.sha256(copied.read_bytes()).digest() == hashlib.sha256(shipped.read_bytes()).digest()
    assert list((site / "static/vendor/@fortawesome/fontawesome-free@6.6.0/webfonts").glob("*.woff2"))
    # pages already pointed are left as they are
    assert offline_docs.localize(site) == [unknown] and (site / "index.html").read_text() == top


def test_only_the_pages_a_build_wrote_are_read_when_named(tmp_path):
    """A site holds a page per stored result: a run points the pages its build wrote, and the
    others, pointed when they were written, are not read again."""
    site = tmp_path / "site"
    jquery = "https://code.jquery.com/jquery-3.7.1.min.js"
    pages = [site / "index.html", *(site / "validations/s" / run / "time/batch.html" for run in ("new", "old"))]
    for page in pages:
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text(f'<script src="{jquery}"></script>')
    assert offline_docs.localize(site, pages=pages[:2]) == []
    assert all("static/vendor/jquery@3.7.1" in page.read_text() for page in pages[:2])
    assert pages[2].read_text() == f'<script src="{jquery}"></script>'  # not named: left unread


def test_without_the_assets_the_site_is_left_and_said(tmp_path, caplog):
    (tmp_path / "index.html").write_text('<script src="https://code.jquery.com/jquery-3.7.1.min.js"></script>')
    assert offline_docs.localize(tmp_path, assets=tmp_path / "none") == sorted(offline_docs.ASSETS)
    assert "installed without the data docs' assets" in caplog.text
    assert "code.jquery.com" in (tmp_path / "index.html").read_text()
