"""binlake: MySQL/MariaDB binary logs to a lake of whole, verified transactions."""

__version__ = "0.1.0"


def pure_python() -> bool:
    """`BINLAKE_PURE_PYTHON=1`: the compiled loops are off and the reference paths do all."""
    import os

    return os.environ.get("BINLAKE_PURE_PYTHON", "") not in ("", "0")
