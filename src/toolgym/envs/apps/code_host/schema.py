"""SQL schema of code_host: users, repositories, access, issues, pull requests and their discussion.

Issues and pull requests share one number sequence per repository (as on GitHub), so "#12"
names exactly one of them. The repository owner is stored as an `admin` collaborator, which
keeps every permission check a single lookup in `collaborators`.
"""

SCHEMA = """
CREATE TABLE users (
    id INTEGER PRIMARY KEY,
    username TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL,
    email TEXT NOT NULL,
    company TEXT NOT NULL,
    joined_at TEXT NOT NULL
);

CREATE TABLE repos (
    id INTEGER PRIMARY KEY,
    owner TEXT NOT NULL REFERENCES users(username),
    name TEXT NOT NULL,
    description TEXT NOT NULL,
    language TEXT NOT NULL,
    stars INTEGER NOT NULL DEFAULT 0,
    visibility TEXT NOT NULL CHECK (visibility IN ('public', 'private')),
    default_branch TEXT NOT NULL DEFAULT 'main',
    created_at TEXT NOT NULL,
    UNIQUE (owner, name)
);
CREATE INDEX idx_repos_name ON repos(name);

CREATE TABLE collaborators (
    id INTEGER PRIMARY KEY,
    repo_id INTEGER NOT NULL REFERENCES repos(id),
    username TEXT NOT NULL REFERENCES users(username),
    permission TEXT NOT NULL CHECK (permission IN ('read', 'write', 'admin')),
    UNIQUE (repo_id, username)
);
CREATE INDEX idx_collaborators_user ON collaborators(username);

CREATE TABLE milestones (
    id INTEGER PRIMARY KEY,
    repo_id INTEGER NOT NULL REFERENCES repos(id),
    title TEXT NOT NULL,
    due_date TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('open', 'closed')),
    UNIQUE (repo_id, title)
);

CREATE TABLE labels (
    id INTEGER PRIMARY KEY,
    repo_id INTEGER NOT NULL REFERENCES repos(id),
    name TEXT NOT NULL,
    color TEXT NOT NULL,
    UNIQUE (repo_id, name)
);

CREATE TABLE issues (
    id INTEGER PRIMARY KEY,
    repo_id INTEGER NOT NULL REFERENCES repos(id),
    number INTEGER NOT NULL,
    title TEXT NOT NULL,
    body TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('open', 'closed')),
    author TEXT NOT NULL REFERENCES users(username),
    assignee TEXT REFERENCES users(username),
    milestone_id INTEGER REFERENCES milestones(id),
    created_at TEXT NOT NULL,
    closed_at TEXT,
    closed_by TEXT REFERENCES users(username),
    UNIQUE (repo_id, number)
);
CREATE INDEX idx_issues_repo_state ON issues(repo_id, state);
CREATE INDEX idx_issues_assignee ON issues(assignee, state);

CREATE TABLE issue_labels (
    id INTEGER PRIMARY KEY,
    issue_id INTEGER NOT NULL REFERENCES issues(id),
    label_id INTEGER NOT NULL REFERENCES labels(id),
    UNIQUE (issue_id, label_id)
);
CREATE INDEX idx_issue_labels_label ON issue_labels(label_id);

CREATE TABLE pull_requests (
    id INTEGER PRIMARY KEY,
    repo_id INTEGER NOT NULL REFERENCES repos(id),
    number INTEGER NOT NULL,
    title TEXT NOT NULL,
    body TEXT NOT NULL,
    head_branch TEXT NOT NULL,
    base_branch TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('open', 'merged', 'closed')),
    author TEXT NOT NULL REFERENCES users(username),
    ci_status TEXT NOT NULL CHECK (ci_status IN ('passing', 'failing')),
    created_at TEXT NOT NULL,
    merged_at TEXT,
    merged_by TEXT REFERENCES users(username),
    merge_method TEXT CHECK (merge_method IN ('merge', 'squash', 'rebase')),
    UNIQUE (repo_id, number)
);
CREATE INDEX idx_pull_requests_repo_state ON pull_requests(repo_id, state);

CREATE TABLE reviews (
    id INTEGER PRIMARY KEY,
    pr_id INTEGER NOT NULL REFERENCES pull_requests(id),
    reviewer TEXT NOT NULL REFERENCES users(username),
    state TEXT NOT NULL CHECK (state IN ('approved', 'changes_requested', 'commented')),
    body TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX idx_reviews_pr ON reviews(pr_id);

CREATE TABLE comments (
    id INTEGER PRIMARY KEY,
    issue_id INTEGER NOT NULL REFERENCES issues(id),
    author TEXT NOT NULL REFERENCES users(username),
    body TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX idx_comments_issue ON comments(issue_id);
"""
