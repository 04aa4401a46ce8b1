"""SQL schema of the mail app: a per-user mailbox (folders, messages, attachments) and a shared calendar.

Messages are mailbox copies: every row belongs to one owner's folder, as in an Exchange store.
Recipients are kept as header text (`to_addresses`, `cc_addresses`: lowercase, sorted, ", "-joined)
so a sent message is one row. Calendar events are shared rows; each attendee has an invite row.
"""

from __future__ import annotations

SCHEMA = """
CREATE TABLE users (
    id          INTEGER PRIMARY KEY,
    username    TEXT NOT NULL UNIQUE,
    name        TEXT NOT NULL,
    email       TEXT NOT NULL UNIQUE,
    phone       TEXT NOT NULL,
    city        TEXT NOT NULL,
    department  TEXT NOT NULL,
    job_title   TEXT NOT NULL,
    has_mailbox INTEGER NOT NULL DEFAULT 0 CHECK (has_mailbox IN (0, 1))
);

CREATE TABLE contacts (
    id          INTEGER PRIMARY KEY,
    owner       TEXT NOT NULL REFERENCES users(username),
    name        TEXT NOT NULL,
    email       TEXT NOT NULL,
    phone       TEXT,
    company     TEXT NOT NULL,
    is_favorite INTEGER NOT NULL DEFAULT 0 CHECK (is_favorite IN (0, 1)),
    UNIQUE (owner, email)
);
CREATE INDEX idx_contacts_owner_name ON contacts(owner, name);

CREATE TABLE folders (
    id         INTEGER PRIMARY KEY,
    owner      TEXT NOT NULL REFERENCES users(username),
    name       TEXT NOT NULL COLLATE NOCASE,
    kind       TEXT NOT NULL CHECK (kind IN ('system', 'custom')),
    created_at TEXT NOT NULL,
    UNIQUE (owner, name)
);

CREATE TABLE messages (
    id             INTEGER PRIMARY KEY,
    owner          TEXT NOT NULL REFERENCES users(username),
    folder_id      INTEGER NOT NULL REFERENCES folders(id),
    thread_id      TEXT NOT NULL,
    sender_name    TEXT NOT NULL,
    sender_address TEXT NOT NULL,
    to_addresses   TEXT NOT NULL,
    cc_addresses   TEXT NOT NULL DEFAULT '',
    subject        TEXT NOT NULL,
    body           TEXT NOT NULL,
    sent_at        TEXT NOT NULL,
    is_read        INTEGER NOT NULL DEFAULT 0 CHECK (is_read IN (0, 1)),
    importance     TEXT NOT NULL DEFAULT 'normal' CHECK (importance IN ('low', 'normal', 'high')),
    in_reply_to    INTEGER REFERENCES messages(id),
    forwarded_from INTEGER REFERENCES messages(id)
);
CREATE INDEX idx_messages_owner_folder ON messages(owner, folder_id, sent_at);
CREATE INDEX idx_messages_owner_date ON messages(owner, sent_at);
CREATE INDEX idx_messages_owner_sender ON messages(owner, sender_address);
CREATE INDEX idx_messages_thread ON messages(owner, thread_id);

CREATE TABLE attachments (
    id           INTEGER PRIMARY KEY,
    message_id   INTEGER NOT NULL REFERENCES messages(id),
    file_name    TEXT NOT NULL,
    size_bytes   INTEGER NOT NULL CHECK (size_bytes > 0),
    content_type TEXT NOT NULL
);
CREATE INDEX idx_attachments_message ON attachments(message_id);

CREATE TABLE calendar_events (
    id          INTEGER PRIMARY KEY,
    organizer   TEXT NOT NULL REFERENCES users(username),
    title       TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    start       TEXT NOT NULL,
    "end"       TEXT NOT NULL,
    location    TEXT NOT NULL DEFAULT '',
    status      TEXT NOT NULL DEFAULT 'scheduled' CHECK (status IN ('scheduled', 'cancelled')),
    created_at  TEXT NOT NULL,
    CHECK ("end" > start)
);
CREATE INDEX idx_events_organizer_start ON calendar_events(organizer, start);
CREATE INDEX idx_events_start ON calendar_events(start);

CREATE TABLE event_invites (
    id            INTEGER PRIMARY KEY,
    event_id      INTEGER NOT NULL REFERENCES calendar_events(id),
    invitee_email TEXT NOT NULL,
    invitee_name  TEXT NOT NULL,
    response      TEXT NOT NULL DEFAULT 'pending' CHECK (response IN ('pending', 'accepted', 'declined')),
    responded_at  TEXT,
    UNIQUE (event_id, invitee_email)
);
CREATE INDEX idx_invites_invitee ON event_invites(invitee_email, response);
"""
