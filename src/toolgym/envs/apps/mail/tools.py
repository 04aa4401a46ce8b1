"""Tools of the mail app: the logged-in user's folders, messages, contacts and calendar.

Mail dated after CURRENT_DATE has not arrived yet, so every mail tool sees only messages sent on or
before today. New messages are stamped today from 19:00 on, one minute apart, so their order is
deterministic. Reading a message never changes its read flag (mark_as_read does).
"""

from __future__ import annotations

from toolgym.envs.apps.mail.tools_calendar import (
    cancel_event,
    create_event,
    get_event,
    list_events,
    list_invites,
    respond_to_invite,
)
from toolgym.envs.apps.mail.tools_messages import (
    create_folder,
    delete_message,
    forward_message,
    list_folders,
    list_messages,
    mark_as_read,
    mark_as_unread,
    move_message,
    read_message,
    reply_to_message,
    search_contacts,
    search_messages,
    send_message,
)

TOOLS = [
    list_folders, create_folder, list_messages, search_messages, read_message, send_message, reply_to_message,
    forward_message, move_message, mark_as_read, mark_as_unread, delete_message, search_contacts,
    list_events, get_event, list_invites, respond_to_invite, create_event, cancel_event,
]
