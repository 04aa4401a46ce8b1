"""SQL schema of the drive app: per-user folder trees, files with versions, sharing, links, comments, activity.

A file's size and last modification are those of its newest version, so they live in
`file_versions` only (one source of truth). Every event row carries its timestamp, and tools show
only what happened on or before CURRENT_DATE. A file always lives in a folder of its owner's Drive.
Roles rank viewer < commenter < editor; a folder share applies to everything inside the folder.
"""

from __future__ import annotations

SCHEMA = """
CREATE TABLE users (
    id          INTEGER PRIMARY KEY,
    username    TEXT NOT NULL UNIQUE,
    name        TEXT NOT NULL,
    email       TEXT NOT NULL UNIQUE,
    plan        TEXT NOT NULL CHECK (plan IN ('none', 'basic', 'standard', 'business')),
    quota_bytes INTEGER NOT NULL CHECK (quota_bytes >= 0),
    has_drive   INTEGER NOT NULL DEFAULT 0 CHECK (has_drive IN (0, 1))
);
CREATE INDEX idx_users_name ON users(name);

CREATE TABLE folders (
    id         INTEGER PRIMARY KEY,
    owner      TEXT NOT NULL REFERENCES users(username),
    parent_id  INTEGER REFERENCES folders(id),
    name       TEXT NOT NULL,
    path       TEXT NOT NULL COLLATE NOCASE,
    created_at TEXT NOT NULL,
    UNIQUE (owner, path)
);
CREATE INDEX idx_folders_parent ON folders(parent_id);

CREATE TABLE files (
    id          INTEGER PRIMARY KEY,
    owner       TEXT NOT NULL REFERENCES users(username),
    folder_id   INTEGER NOT NULL REFERENCES folders(id),
    name        TEXT NOT NULL,
    mime_type   TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    trashed_at  TEXT,
    copied_from INTEGER REFERENCES files(id)
);
CREATE INDEX idx_files_folder ON files(folder_id, name);
CREATE INDEX idx_files_owner ON files(owner, created_at);
CREATE INDEX idx_files_name ON files(name);

CREATE TABLE file_versions (
    id             INTEGER PRIMARY KEY,
    file_id        INTEGER NOT NULL REFERENCES files(id),
    version_number INTEGER NOT NULL CHECK (version_number >= 1),
    size_bytes     INTEGER NOT NULL CHECK (size_bytes > 0),
    author         TEXT NOT NULL REFERENCES users(username),
    created_at     TEXT NOT NULL,
    restored_from  INTEGER,
    UNIQUE (file_id, version_number)
);
CREATE INDEX idx_versions_author ON file_versions(author, created_at);

CREATE TABLE permissions (
    id         INTEGER PRIMARY KEY,
    file_id    INTEGER REFERENCES files(id),
    folder_id  INTEGER REFERENCES folders(id),
    grantee    TEXT NOT NULL REFERENCES users(username),
    role       TEXT NOT NULL CHECK (role IN ('viewer', 'commenter', 'editor')),
    granted_by TEXT NOT NULL REFERENCES users(username),
    granted_at TEXT NOT NULL,
    CHECK ((file_id IS NULL) != (folder_id IS NULL)),
    UNIQUE (file_id, grantee),
    UNIQUE (folder_id, grantee)
);
CREATE INDEX idx_permissions_grantee ON permissions(grantee, granted_at);

CREATE TABLE share_links (
    id         INTEGER PRIMARY KEY,
    file_id    INTEGER NOT NULL UNIQUE REFERENCES files(id),
    token      TEXT NOT NULL UNIQUE,
    role       TEXT NOT NULL CHECK (role IN ('viewer', 'commenter', 'editor')),
    created_by TEXT NOT NULL REFERENCES users(username),
    created_at TEXT NOT NULL
);

CREATE TABLE comments (
    id         INTEGER PRIMARY KEY,
    file_id    INTEGER NOT NULL REFERENCES files(id),
    author     TEXT NOT NULL REFERENCES users(username),
    body       TEXT NOT NULL,
    created_at TEXT NOT NULL,
    resolved   INTEGER NOT NULL DEFAULT 0 CHECK (resolved IN (0, 1))
);
CREATE INDEX idx_comments_file ON comments(file_id, created_at);

CREATE TABLE activity (
    id          INTEGER PRIMARY KEY,
    actor       TEXT NOT NULL REFERENCES users(username),
    action      TEXT NOT NULL CHECK (action IN ('upload', 'edit', 'create_folder', 'rename', 'move', 'share',
                                                'unshare', 'link', 'unlink', 'comment', 'trash', 'restore',
                                                'restore_version', 'copy')),
    file_id     INTEGER REFERENCES files(id),
    folder_id   INTEGER REFERENCES folders(id),
    detail      TEXT NOT NULL DEFAULT '',
    occurred_at TEXT NOT NULL
);
CREATE INDEX idx_activity_file ON activity(file_id, occurred_at);
CREATE INDEX idx_activity_folder ON activity(folder_id, occurred_at);
CREATE INDEX idx_activity_time ON activity(occurred_at);
"""
