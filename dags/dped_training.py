"""DPED word embeddings (monthly, or triggered by hand): train_dped -> publish -> report.

``train_dped`` charges the ledger, then stages its model version's vectors in ``protected.word_vectors``;
``publish`` releases them to ``published.word_vectors`` (gate: the staging run's DP ledger charge). Its
utility figures (word similarity, downstream accuracy) are logged to its MLflow run.
"""
from privtext_airflow import privtext_dag, report_task, stage_task

with privtext_dag("dped_training", "DP word embeddings (teacher ensemble + noisy aggregation + student)", "@monthly"):
    stage_task("train_dped") >> stage_task("publish", "--target", "word_vectors") >> report_task()
