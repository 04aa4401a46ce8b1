"""Entry point: `toolgym <group> <command>`; each group lives in its own module."""

from __future__ import annotations

import typer

from toolgym.cli import data as data_cli
from toolgym.cli import eval as eval_cli
from toolgym.cli import harness as harness_cli
from toolgym.cli import model, rollout, serve, tasks
from toolgym.cli import pipeline as pipeline_cli
from toolgym.cli import report as report_cli
from toolgym.cli import traces as traces_cli
from toolgym.cli import train as train_cli

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Train tool-using LLM agents and prove what training did.")
app.add_typer(tasks.app, name="tasks", help="Build, validate and import task datasets.")
app.add_typer(model.app, name="model", help="Build the embedded tiny model.")
app.command("rollout")(rollout.rollout)
app.add_typer(harness_cli.app, name="harness", help="Run, score and record an agent harness of your own on the tasks.")
app.add_typer(serve.app, name="serve", help="Serve a checkpoint (+ LoRA) as an OpenAI-compatible policy.")
app.add_typer(eval_cli.app, name="eval", help="pass@k / pass^k per env and split, trials, checkpoint sweeps, leakage.")
app.add_typer(traces_cli.app, name="traces", help="Trace analysis: diff two runs of the same tasks.")
app.command("report")(report_cli.report)
app.add_typer(data_cli.app, name="data", help="Validate results/SFT rows; convert a rollout run to SFT rows.")
app.add_typer(train_cli.app, name="train", help="SFT (full or LoRA), rejection sampling (RFT) and GRPO.")
app.command("pipeline")(pipeline_cli.pipeline)


if __name__ == "__main__":
    app()
