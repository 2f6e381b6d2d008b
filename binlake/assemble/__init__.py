"""Assembly: one file's events walked into whole transactions, their row changes and anomalies."""
