"""spark-submit entry point: ``spark-submit jobs/sanitize.py [--date YYYY-MM-DD] [--conf FILE] [stage options]``."""
import sys

from privtext.stages.runner import job_main

if __name__ == "__main__":
    sys.exit(job_main("sanitize", sys.argv[1:]))
