"""spark-submit entry point of the nightly export's audit with AmPL's loop (re-sanitize at stricter eps
while the audit refuses): ``spark-submit jobs/audit_and_retune.py --date YYYY-MM-DD [--conf FILE]``."""
import sys

from privtext.pipelines import audit_and_retune_main

if __name__ == "__main__":
    sys.exit(audit_and_retune_main(sys.argv[1:]))
