"""spark-submit entry point: ``spark-submit jobs/ingest.py --input PATH [--date YYYY-MM-DD] [--conf FILE]``."""
import sys

from privtext.stages.runner import job_main

if __name__ == "__main__":
    sys.exit(job_main("ingest", sys.argv[1:]))
