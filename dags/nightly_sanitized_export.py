"""Nightly sanitized export: ingest -> detect_pii -> embed -> sanitize -> audit -> publish -> report.

``publish`` copies the date's sanitized documents to ``published`` only if the leakage audit passed;
any failure before it leaves ``published`` as it was. Rerunning a date replaces that date's partitions.
"""
from privtext_airflow import ingest_task, privtext_dag, report_task, stage_task

with privtext_dag("nightly_sanitized_export", "CluSanT-sanitized documents, mPL-audited, published nightly", "@daily"):
    (ingest_task() >> stage_task("detect_pii") >> stage_task("embed") >> stage_task("sanitize")
     >> stage_task("audit", "--target", "sanitized_documents")
     >> stage_task("publish", "--target", "sanitized_documents") >> report_task())
