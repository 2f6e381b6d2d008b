"""spark-submit entry point of `binlake tables` (binlake.spark.tables does the work).

    spark-submit spark_jobs/apply_tables.py --store s3://archive --warehouse s3a://lake \
        --start 2026-11-22T10:00:00Z --end 2026-11-22T11:00:00Z --quality /srv/quality
"""

import argparse

from binlake.spark import add_tables_arguments, run_tables, submitted

if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="apply_tables", description=__doc__.splitlines()[0])
    add_tables_arguments(parser)
    submitted(run_tables, parser.parse_args())  # exit 1 when a source's range is refused
