"""binlake: MySQL/MariaDB binary logs to a lake of whole, verified transactions."""

__version__ = "0.1.0"


def pure_python() -> bool:
    """`BINLAKE_PURE_PYTHON=1`: the compiled loops are off and the reference paths do all."""
    import os

    return os.environ.get("BINLAKE_PURE_PYTHON", "") not in ("", "0")


def compiled_paths() -> str:
    """Which compiled loops this process runs, for its first log line: a container whose
    extensions went missing (a bind mount over an editable install) says so instead of silently
    running the reference paths, about ten times slower."""
    from binlake.archive import loop
    from binlake.binlog import fastrows, framing

    if pure_python():
        return "pure Python (BINLAKE_PURE_PYTHON=1)"
    found = {"row decoder _rowdecode": fastrows.enabled(), "copy loop _eventruns": loop() is not None,
             "frame walk _frames": framing.compiled()}
    missing = [name for name, ok in found.items() if not ok]
    return "compiled (row decoder, copy loop, frame walk)" if not missing else \
        f"NOT BUILT: {', '.join(missing)}: the pure-Python reference paths run (pip install binlake builds them)"
