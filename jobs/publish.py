"""spark-submit entry point: ``spark-submit jobs/publish.py [--date YYYY-MM-DD] [--conf FILE] [stage options]``."""
import sys

from privtext.stages.runner import job_main

if __name__ == "__main__":
    sys.exit(job_main("publish", sys.argv[1:]))
