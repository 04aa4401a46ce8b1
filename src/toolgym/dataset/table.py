"""The seed's per-environment Train / Eval / Total table."""

from __future__ import annotations

from collections import Counter

from rich.table import Table

from toolgym.schema import Task


def split_table(tasks: list[Task], title: str = "") -> Table:
    train = Counter(t.env for t in tasks if t.split == "train")
    evals = Counter(t.env for t in tasks if t.is_eval)
    table = Table(title=title or None)
    for column in ("Environment", "Train", "Eval", "Total"):
        table.add_column(column, justify="left" if column == "Environment" else "right")
    for env in sorted(set(train) | set(evals)):
        table.add_row(env, f"{train[env]:,}", f"{evals[env]:,}", f"{train[env] + evals[env]:,}")
    total_train, total_eval = sum(train.values()), sum(evals.values())
    table.add_row("[b]TOTAL[/b]", f"[b]{total_train:,}[/b]", f"[b]{total_eval:,}[/b]", f"[b]{total_train + total_eval:,}[/b]")
    return table
