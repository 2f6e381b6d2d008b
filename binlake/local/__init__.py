"""The local stack: `binlake demo` and `binlake airflow` on this machine, and the data docs' assets."""
