"""DPED word embeddings (monthly, or triggered by hand): train_dped -> report.

``train_dped`` charges the ledger, then writes ``published.word_vectors`` for its model version; its
utility figures (word similarity, downstream accuracy) are logged to its MLflow run.
"""
from privtext_airflow import privtext_dag, report_task, stage_task

with privtext_dag("dped_training", "DP word embeddings (teacher ensemble + noisy aggregation + student)", "@monthly"):
    stage_task("train_dped") >> report_task()
