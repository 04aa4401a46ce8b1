"""Tools of the drive app: the logged-in user's Drive, files shared with them, versions, sharing and trash.

Drive shows the world as of CURRENT_DATE: files, versions, shares, links, comments and activity dated
later have not happened yet. A file's size and modification are those of its newest version. Access
is the best of ownership, a share on the file and a share on any folder above it (viewer < commenter
< editor < owner). New rows are stamped today from 18:00 on, one minute per change, so their order
is deterministic. Every change also writes one activity row.
"""

from __future__ import annotations

from toolgym.envs.apps.drive.tools_files import (
    copy_file,
    create_drive_folder,
    get_file,
    get_storage_usage,
    list_drive_folder,
    list_trash,
    move_file,
    rename_file,
    restore_file,
    search_files,
    trash_file,
)
from toolgym.envs.apps.drive.tools_history import (
    comment_on_file,
    get_file_activity,
    list_file_comments,
    list_file_versions,
    restore_file_version,
)
from toolgym.envs.apps.drive.tools_sharing import (
    create_share_link,
    disable_share_link,
    list_shared_with_me,
    search_people,
    share_file,
    share_folder,
    unshare_file,
    unshare_folder,
)

TOOLS = [
    list_drive_folder, search_files, get_file, list_shared_with_me, list_file_versions, list_file_comments,
    get_file_activity, get_storage_usage, list_trash, search_people, create_drive_folder, move_file, rename_file,
    copy_file, share_file, unshare_file, share_folder, unshare_folder, create_share_link, disable_share_link,
    restore_file_version, trash_file, restore_file, comment_on_file,
]
