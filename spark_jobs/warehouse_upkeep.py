"""spark-submit entry point of the warehouse's upkeep (binlake.spark.run_upkeep does the work).

    spark-submit spark_jobs/warehouse_upkeep.py --warehouse s3a://lake --retain-days 7 --quality /srv/quality
"""

import argparse

from binlake.spark import add_upkeep_arguments, run_upkeep, submitted

if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="warehouse_upkeep", description=__doc__.splitlines()[0])
    parser.add_argument("--warehouse", required=True)
    add_upkeep_arguments(parser)
    args = parser.parse_args()
    args.master, args.conf = None, None  # spark-submit's
    submitted(run_upkeep, args)
