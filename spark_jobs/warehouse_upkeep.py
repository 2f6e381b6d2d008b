"""spark-submit entry point of the warehouse's upkeep (binlake.spark.warehouse does the work).

    spark-submit spark_jobs/warehouse_upkeep.py --warehouse s3a://lake --retain-days 7
"""

import argparse

from binlake.spark import run_upkeep, submitted
from binlake.spark.settings import RETAIN_DAYS

if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="warehouse_upkeep", description=__doc__.splitlines()[0])
    parser.add_argument("--warehouse", required=True)
    parser.add_argument("--retain-days", type=int, default=RETAIN_DAYS)
    args = parser.parse_args()
    args.master, args.conf = None, None  # spark-submit's
    submitted(run_upkeep, args)
