"""The app kit: what every app's task families and tools share, defined once.

Apps use it as `from toolgym.envs import kit` and `kit.call(...)`; docs/adding-an-app.md lists it in full.

- dates: the CURRENT_DATE window (`FIRST_DAY`..`LAST_DAY`), `random_day`, `day_in_window`, `today_before`,
  `human_date` ('May 3', 'Sunday, May 3', 'May 3, 2026'), `relative_day` ('next Friday' and a
  CURRENT_DATE on which it means that day);
- phrasing: `phrase` / `pick_phrasing` (a wording and its index), `plural`, `names_list`, `with_article`,
  `money`, `clock`;
- picks: `pick` (a row or None), `unique_best` (a clear winner or None), `pick_group` (a kind drawn evenly,
  then its items), `next_id`, `user_by_id`, `env_vars` / `env_for` / `env_for_username`, `TaskUser` (who a
  task logs in as), `members_with` (a group's members holding some roles);
- calls: `call` (a gold ToolCall) and `SeedReader` (an app's tools run on the read-only seed);
- checks: `diff_only`, `answer_has`, `lookup_checks`, `impossible_checks`;
- tooling (for tools): `date_arg`, `logged_in_user` (or `directory_member` in an organisation's apps),
  `row_by_id` (the row an id argument names, or an error naming the argument), `payment_method`,
  `listed_payment_methods`, `scrambled_symbols` (a booking code from a rowid);
- seeding (for schema.py and data.py): `named_rows`, `insert_population` into `POPULATION_USERS_TABLE`,
  `insert_cards` into `CARDS_TABLE`;
- package: `PackagedApp` and `read_policy`: an app package declares its parts, the kit wires them;
- row_checks (for write tasks): `has_row`, `field_is`, `inserted`, `updated`, `only` (one line a check);
- sql (for tools): `Where`, a WHERE clause from optional filters (`when(value, condition)`: one line a filter);
- texts: `module_texts(__file__)`, a module's prompt templates and word lists from `texts/<module>.json`.
"""

from toolgym.envs.kit.calls import SeedReader, call
from toolgym.envs.kit.checks import SAYS_IT_CANNOT, answer_has, diff_only, impossible_checks, lookup_checks
from toolgym.envs.kit.codes import CODE_ALPHABET, scrambled_symbols
from toolgym.envs.kit.dates import (
    FIRST_DAY,
    LAST_DAY,
    WEEKDAY_NAMES,
    day_in_window,
    day_of,
    human_date,
    iso,
    random_day,
    relative_day,
    today_before,
)
from toolgym.envs.kit.grouped import pick_group
from toolgym.envs.kit.lookups import row_by_id
from toolgym.envs.kit.members import members_with
from toolgym.envs.kit.package import PackagedApp, read_policy
from toolgym.envs.kit.payments import listed_payment_methods
from toolgym.envs.kit.phrasing import clock, money, names_list, phrase, pick_phrasing, plural, with_article
from toolgym.envs.kit.picks import env_for, env_for_username, env_vars, next_id, pick, unique_best, user_by_id
from toolgym.envs.kit.row_checks import field_is, has_row, inserted, only, updated
from toolgym.envs.kit.seeding import (
    CARDS_TABLE,
    POPULATION_USERS_TABLE,
    insert_cards,
    insert_population,
    named_rows,
)
from toolgym.envs.kit.sql import Where
from toolgym.envs.kit.task_user import TaskUser
from toolgym.envs.kit.texts import module_texts
from toolgym.envs.kit.tooling import date_arg, directory_member, logged_in_user, payment_method

__all__ = [
    "CARDS_TABLE",
    "CODE_ALPHABET",
    "FIRST_DAY",
    "LAST_DAY",
    "POPULATION_USERS_TABLE",
    "SAYS_IT_CANNOT",
    "WEEKDAY_NAMES",
    "PackagedApp",
    "SeedReader",
    "TaskUser",
    "Where",
    "answer_has",
    "call",
    "clock",
    "date_arg",
    "day_in_window",
    "day_of",
    "diff_only",
    "directory_member",
    "env_for",
    "env_for_username",
    "env_vars",
    "field_is",
    "has_row",
    "human_date",
    "impossible_checks",
    "insert_cards",
    "insert_population",
    "inserted",
    "iso",
    "listed_payment_methods",
    "logged_in_user",
    "lookup_checks",
    "members_with",
    "module_texts",
    "money",
    "named_rows",
    "names_list",
    "next_id",
    "only",
    "payment_method",
    "phrase",
    "pick",
    "pick_group",
    "pick_phrasing",
    "plural",
    "random_day",
    "read_policy",
    "relative_day",
    "row_by_id",
    "scrambled_symbols",
    "today_before",
    "unique_best",
    "updated",
    "user_by_id",
    "with_article",
]
