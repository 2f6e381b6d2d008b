"""Airflow operators, sensors and tasks that wrap the binlake library (plugins/ is on Airflow's path).

The DAG files in dags/ only wire these together; binlake itself never imports Airflow.
"""
