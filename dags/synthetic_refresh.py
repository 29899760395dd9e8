"""Weekly synthetic refresh: ingest (the week's files) -> detect_pii -> embed -> synthesize -> evaluate
-> publish synthetic_documents -> report.

``synthesize`` charges the ledger before it writes the staged release; ``publish`` (last Spark task)
is the only writer of ``published.synthetic_documents``.
"""
from privtext_airflow import ingest_task, privtext_dag, report_task, stage_task

with privtext_dag("synthetic_refresh",
                  "SecPE synthetic documents under (p,r)-secret protection, evaluated and published weekly", "@weekly"):
    (ingest_task() >> stage_task("detect_pii") >> stage_task("embed") >> stage_task("synthesize")
     >> stage_task("evaluate")
     >> stage_task("publish", "--target", "synthetic_documents") >> report_task())
