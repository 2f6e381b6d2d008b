"""spark-submit entry point of the assemble job (binlake.spark.job does the work).

    spark-submit spark_jobs/assemble_transactions.py --store s3://archive --warehouse s3a://lake \
        --start 2026-11-22T10:00:00Z --end 2026-11-22T11:00:00Z
"""

import argparse
import logging
import sys

from binlake.errors import BinlakeError
from binlake.spark import add_arguments, run

if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="assemble_transactions", description=__doc__.splitlines()[0])
    add_arguments(parser)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s",
                        stream=sys.stderr, force=True)
    try:
        sys.exit(run(parser.parse_args()))
    except BinlakeError as e:
        print(f"binlake: {e}", file=sys.stderr)
        sys.exit(1)
