"""Task families of the drive app: seventeen kinds of request over files, versions, sharing and trash.

Each generator picks a Drive user and a CURRENT_DATE with `rng`, reads the seed through the app's
own tools, and emits the prompt, the gold calls, the expected answer and weighted checks. Writes are
checked on the intended row (new rows by the id the next insert gets) plus a `diff_only` of exactly
the expected changes, activity rows included.
"""

from __future__ import annotations

from toolgym.envs import TaskFamily
from toolgym.envs.apps.drive.tasks_files import (
    collect_quarter_invoices,
    files_i_modified,
    last_editor_of_file,
    rename_file,
    restore_before_edit,
    restore_from_trash,
    trash_largest_of_type,
)
from toolgym.envs.apps.drive.tasks_impossible import (
    copy_over_quota,
    rename_to_taken_name,
    restore_missing_version,
    restore_over_namesake,
    share_view_only_file,
)
from toolgym.envs.apps.drive.tasks_sharing import (
    copy_recent_share,
    share_file_with_role,
    share_kind_in_folder,
    share_latest_in_folder,
    shared_with_me_recently,
    who_has_access,
)

FAMILIES: tuple[TaskFamily, ...] = (
    TaskFamily("last_editor_of_file", "lookup", last_editor_of_file),
    TaskFamily("who_has_access", "lookup", who_has_access),
    TaskFamily("share_file_with_role", "write", share_file_with_role),
    TaskFamily("rename_file", "write", rename_file),
    TaskFamily("restore_from_trash", "write", restore_from_trash),
    TaskFamily("share_latest_in_folder", "search_choose_write", share_latest_in_folder),
    TaskFamily("trash_largest_of_type", "search_choose_write", trash_largest_of_type),
    TaskFamily("restore_before_edit", "search_choose_write", restore_before_edit),
    TaskFamily("collect_quarter_invoices", "multi_step", collect_quarter_invoices),
    TaskFamily("share_kind_in_folder", "multi_step", share_kind_in_folder),
    TaskFamily("files_i_modified", "context", files_i_modified),
    TaskFamily("shared_with_me_recently", "context", shared_with_me_recently),
    TaskFamily("copy_recent_share", "context", copy_recent_share),
    TaskFamily("share_view_only_file", "impossible", share_view_only_file),
    TaskFamily("restore_missing_version", "impossible", restore_missing_version),
    TaskFamily("rename_to_taken_name", "impossible", rename_to_taken_name),
    TaskFamily("copy_over_quota", "impossible", copy_over_quota),
    TaskFamily("restore_over_namesake", "impossible", restore_over_namesake),
)
