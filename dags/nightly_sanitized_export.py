"""Nightly sanitized export: ingest -> detect_pii -> embed -> sanitize -> audit -> publish -> report -> retention.

``audit`` runs the leakage audit and, while it refuses, AmPL's loop (``privtext.pipelines.audit_and_retune``:
re-sanitize at stricter eps, re-audit, at most ``ampl.retune_rounds`` rounds); ``publish`` copies the date's
sanitized documents to ``published`` only if the last audit passed;
any failure before it leaves ``published`` as it was. Rerunning a date replaces that date's partitions.
``retention`` then erases raw text older than ``retention.restricted_days`` (off while unset).
"""
from privtext_airflow import ingest_task, privtext_dag, report_task, retention_task, stage_task

with privtext_dag("nightly_sanitized_export", "CluSanT-sanitized documents, mPL-audited, published nightly", "@daily"):
    (ingest_task() >> stage_task("detect_pii") >> stage_task("embed") >> stage_task("sanitize")
     >> stage_task("audit_and_retune", task_id="audit")
     >> stage_task("publish", "--target", "sanitized_documents") >> report_task() >> retention_task())
