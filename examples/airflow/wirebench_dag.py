"""wirebench as an Airflow DAG: one BashOperator task per stage.

replay -> capture -> aggregate -> report, each reading only the files of the stage before, so a
failed task can be retried on its own and `report` can be rerun on old runs without traffic.
Set the Airflow Variable `wirebench_config` to the run config (YAML) and make the `wirebench`
binary available on the workers; runs land in /data/wirebench/runs/<run id>.
"""

from datetime import datetime, timedelta

from airflow import DAG
from airflow.operators.bash import BashOperator

RUN = "/data/wirebench/runs/{{ ds_nodash }}-{{ ti.run_id | replace(':', '-') | replace('+', '-') }}"
CONFIG = "{{ var.value.get('wirebench_config', '/data/wirebench/configs/sweep.yaml') }}"

with DAG(
    dag_id="wirebench",
    description="Benchmark an LLM serving endpoint with wirebench: replay, capture, aggregate, report.",
    start_date=datetime(2025, 1, 1),
    schedule=None,  # trigger by hand or from a deployment pipeline
    catchup=False,
    max_active_runs=1,  # two benchmarks at once would load the server together
    default_args={"retries": 0, "execution_timeout": timedelta(hours=2)},
    tags=["benchmark", "llm"],
) as dag:
    replay = BashOperator(
        task_id="replay",
        bash_command=f"wirebench replay {CONFIG} -o {RUN} --force",
    )
    capture = BashOperator(
        task_id="capture",
        bash_command=f"wirebench capture {RUN} --quiet",
    )
    aggregate = BashOperator(
        task_id="aggregate",
        bash_command=f"wirebench aggregate {RUN}",
    )
    report = BashOperator(
        task_id="report",
        bash_command=f"wirebench report {RUN}",
    )

    replay >> capture >> aggregate >> report
