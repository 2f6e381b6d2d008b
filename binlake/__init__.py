"""binlake: MySQL/MariaDB binary logs to a lake of whole, verified transactions."""

__version__ = "0.1.0"
