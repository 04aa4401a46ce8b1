"""Task families of the mail app: fourteen kinds of request over the mailbox and the calendar.

Each generator picks a mailbox owner and a CURRENT_DATE with `rng`, reads the seed through the
app's own tools, and emits the prompt, the gold calls, the expected answer and weighted checks.
Writes are checked on the intended row (new rows by the id the next insert gets) plus a
`diff_only` of exactly the expected changes.
"""

from __future__ import annotations

from toolgym.envs import TaskFamily
from toolgym.envs.apps.mail.tasks_calendar import (
    accept_invites_without_clashes,
    agenda_for_day,
    cancel_meeting,
    schedule_meeting,
)
from toolgym.envs.apps.mail.tasks_impossible import (
    accept_cancelled_invite,
    reply_to_missing_message,
    send_to_non_contact,
)
from toolgym.envs.apps.mail.tasks_messages import (
    attachment_name,
    forward_latest_about_topic,
    latest_sender_about_topic,
    move_latest_unread_from_sender,
    reply_to_last_from,
    send_to_contact,
    triage_unread_from_sender,
)

FAMILIES: tuple[TaskFamily, ...] = (
    TaskFamily("latest_sender_about_topic", "lookup", latest_sender_about_topic),
    TaskFamily("attachment_name", "lookup", attachment_name),
    TaskFamily("send_to_contact", "write", send_to_contact),
    TaskFamily("cancel_meeting", "write", cancel_meeting),
    TaskFamily("forward_latest_about_topic", "search_choose_write", forward_latest_about_topic),
    TaskFamily("move_latest_unread_from_sender", "search_choose_write", move_latest_unread_from_sender),
    TaskFamily("reply_to_last_from", "search_choose_write", reply_to_last_from),
    TaskFamily("triage_unread_from_sender", "multi_step", triage_unread_from_sender),
    TaskFamily("accept_invites_without_clashes", "multi_step", accept_invites_without_clashes),
    TaskFamily("agenda_for_day", "context", agenda_for_day),
    TaskFamily("schedule_meeting", "context", schedule_meeting),
    TaskFamily("reply_to_missing_message", "impossible", reply_to_missing_message),
    TaskFamily("accept_cancelled_invite", "impossible", accept_cancelled_invite),
    TaskFamily("send_to_non_contact", "impossible", send_to_non_contact),
)
