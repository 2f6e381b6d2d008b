"""bench/RESULTS.md keeps one section per benchmark: a bench run replaces its own and no other;
what the docs say of the benchmarks is what they measure."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bench import results

SECTIONS = [
    "bench/memory.py",
    "bench/scan.py",
    "bench/scan.py --rows-query (Rows_query events on)",
    "bench/assemble.py",
    "bench/assemble.py --shape mix (production's mix)",
    "bench/assemble.py --shape mix-shipped (production's mix, MySQL as shipped)",
    "bench/archive.py",
    "bench/schema.py",
    "bench/shapes.py",
    "bench/interval.py",
    "bench/manifests.py",
    "bench/hourly.py",
    "bench/delta_cost.py",
    "bench/delta_cost.py --fixed (Delta's fixed costs per commit)",
    "bench/snapshot.py",
    "bench/tables.py",
    "bench/tables_shapes.py",
    "bench/samples.py (a DAG run of the samples)",
    "bench/classes.py (class data sharing)",
    "bench/quality_store.py",
]


def _titles(text: str) -> list[str]:
    return re.findall(r"(?m)^## (.+)$", text)


def test_results_has_every_benchmarks_section() -> None:
    """The targets table is read from these sections; one lost from the file leaves a target unbacked."""
    titles = _titles(results.PATH.read_text())
    assert titles[0].startswith("The performance issue's targets")
    assert sorted(titles[1:]) == sorted(SECTIONS)


@pytest.mark.parametrize("title", SECTIONS)
def test_write_section_replaces_only_its_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, title: str) -> None:
    copy = tmp_path / "RESULTS.md"
    original = results.PATH.read_text()
    copy.write_text(original)
    monkeypatch.setattr(results, "PATH", copy)
    results.write_section(title, "Made by a test.\n\n| a | b |\n")
    text = copy.read_text()
    assert sorted(_titles(text)) == sorted(_titles(original))
    assert text.count("Made by a test.") == 1
    for other in SECTIONS:
        if other != title:
            body = original.split(f"## {other}\n", 1)[1].split("\n## ", 1)[0].strip()
            assert body in text


def test_a_rerun_keeps_the_sections_notes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What was found by hand (under `### Notes`) outlives the figures a benchmark writes again."""
    copy = tmp_path / "RESULTS.md"
    monkeypatch.setattr(results, "PATH", copy)
    copy.write_text("# R\n\n## bench/a.py\n\nold figures\n\n### Notes\n\nfound by hand\n\n## bench/b.py\n\nb's\n")
    results.write_section("bench/a.py", "new figures")
    text = copy.read_text()
    assert "old figures" not in text and "b's" in text
    assert text.endswith("## bench/a.py\n\nnew figures\n\n### Notes\n\nfound by hand\n")


def test_published_section_says_how_fast_the_machine_was(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each section ends with the machine's load and loop speed: its figures compare only with
    figures of a machine as fast (this one ran half as fast on one day as on the day before)."""
    copy = tmp_path / "RESULTS.md"
    monkeypatch.setattr(results, "PATH", copy)
    results.publish("bench/test.py", ["| a | b |"])
    body = copy.read_text().split("## bench/test.py\n", 1)[1]
    assert re.search(r"\| a \| b \|\n\nThe machine when the run ended: \d+ cores, load average \d+\.\d, "
                     r"a Python loop of 10 million squares in \d+\.\d\d s\.\n$", body), body


def test_small_heap_recipe_is_the_one_measured() -> None:
    """docs/warehouse.md tells users the JVM settings whose memory bench/memory.py reports."""
    from bench import memory

    doc = (results.REPO / "docs" / "warehouse.md").read_text()
    assert f"spark.driver.extraJavaOptions='{memory.LEAN_JVM}'" in doc
    assert "spark.driver.memory=480m" in doc  # the heap bench/memory.py's small-heap run is given
