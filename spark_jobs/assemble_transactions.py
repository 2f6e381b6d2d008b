"""spark-submit entry point of the assemble job (binlake.spark.job does the work).

    spark-submit spark_jobs/assemble_transactions.py --store s3://archive --warehouse s3a://lake \
        --start 2026-11-22T10:00:00Z --end 2026-11-22T11:00:00Z
"""

import argparse

from binlake.spark import add_arguments, run, submitted

if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="assemble_transactions", description=__doc__.splitlines()[0])
    add_arguments(parser)
    submitted(run, parser.parse_args())
