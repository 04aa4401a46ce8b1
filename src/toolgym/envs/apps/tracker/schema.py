"""SQL schema of tracker: projects with per-project workflows, sprints, tickets and their activity.

A project's workflow is data: `statuses` (ordered, each in a category) and the `transitions`
allowed between them, so every status a ticket holds and every move it makes is checked by a
foreign key or a lookup. Ticket keys ('PLAT-123') are stored next to their parts for direct
lookups. `code_ref` is free text naming a code_host pull request ('owner/repo#12'): a reference
across apps, so it has no foreign key.
"""

SCHEMA = """
CREATE TABLE users (
    id INTEGER PRIMARY KEY,
    username TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL,
    email TEXT NOT NULL,
    job_title TEXT NOT NULL,
    joined_at TEXT NOT NULL
);

CREATE TABLE projects (
    id INTEGER PRIMARY KEY,
    key TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL UNIQUE,
    description TEXT NOT NULL,
    lead TEXT NOT NULL REFERENCES users(username),
    workflow TEXT NOT NULL CHECK (workflow IN ('software', 'qa', 'basic')),
    created_at TEXT NOT NULL
);

CREATE TABLE project_members (
    id INTEGER PRIMARY KEY,
    project_id INTEGER NOT NULL REFERENCES projects(id),
    username TEXT NOT NULL REFERENCES users(username),
    role TEXT NOT NULL CHECK (role IN ('admin', 'member')),
    UNIQUE (project_id, username)
);
CREATE INDEX idx_project_members_user ON project_members(username);

CREATE TABLE project_repos (
    id INTEGER PRIMARY KEY,
    project_id INTEGER NOT NULL REFERENCES projects(id),
    repo TEXT NOT NULL,
    UNIQUE (project_id, repo)
);

CREATE TABLE statuses (
    id INTEGER PRIMARY KEY,
    project_id INTEGER NOT NULL REFERENCES projects(id),
    name TEXT NOT NULL,
    position INTEGER NOT NULL,
    category TEXT NOT NULL CHECK (category IN ('todo', 'in_progress', 'done')),
    UNIQUE (project_id, name)
);

CREATE TABLE transitions (
    id INTEGER PRIMARY KEY,
    project_id INTEGER NOT NULL REFERENCES projects(id),
    from_status TEXT NOT NULL,
    to_status TEXT NOT NULL,
    UNIQUE (project_id, from_status, to_status),
    FOREIGN KEY (project_id, from_status) REFERENCES statuses(project_id, name),
    FOREIGN KEY (project_id, to_status) REFERENCES statuses(project_id, name)
);

CREATE TABLE sprints (
    id INTEGER PRIMARY KEY,
    project_id INTEGER NOT NULL REFERENCES projects(id),
    name TEXT NOT NULL,
    goal TEXT NOT NULL,
    start_date TEXT NOT NULL,
    end_date TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('planned', 'active', 'closed')),
    UNIQUE (project_id, name)
);
CREATE INDEX idx_sprints_project_state ON sprints(project_id, state);

CREATE TABLE tickets (
    id INTEGER PRIMARY KEY,
    project_id INTEGER NOT NULL REFERENCES projects(id),
    number INTEGER NOT NULL,
    key TEXT NOT NULL UNIQUE,
    type TEXT NOT NULL CHECK (type IN ('bug', 'story', 'task', 'epic')),
    summary TEXT NOT NULL,
    description TEXT NOT NULL,
    status TEXT NOT NULL,
    priority TEXT NOT NULL CHECK (priority IN ('Highest', 'High', 'Medium', 'Low', 'Lowest')),
    assignee TEXT REFERENCES users(username),
    reporter TEXT NOT NULL REFERENCES users(username),
    story_points INTEGER CHECK (story_points IS NULL OR story_points IN (1, 2, 3, 5, 8, 13, 21)),
    sprint_id INTEGER REFERENCES sprints(id),
    due_date TEXT,
    code_ref TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    resolved_at TEXT,
    UNIQUE (project_id, number),
    FOREIGN KEY (project_id, status) REFERENCES statuses(project_id, name)
);
CREATE INDEX idx_tickets_project_status ON tickets(project_id, status);
CREATE INDEX idx_tickets_assignee ON tickets(assignee);
CREATE INDEX idx_tickets_sprint ON tickets(sprint_id);
CREATE INDEX idx_tickets_due ON tickets(due_date);

CREATE TABLE comments (
    id INTEGER PRIMARY KEY,
    ticket_id INTEGER NOT NULL REFERENCES tickets(id),
    author TEXT NOT NULL REFERENCES users(username),
    body TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX idx_comments_ticket ON comments(ticket_id);

CREATE TABLE ticket_links (
    id INTEGER PRIMARY KEY,
    source_id INTEGER NOT NULL REFERENCES tickets(id),
    target_id INTEGER NOT NULL REFERENCES tickets(id),
    link_type TEXT NOT NULL CHECK (link_type IN ('blocks', 'relates', 'duplicates')),
    created_at TEXT NOT NULL,
    UNIQUE (source_id, target_id, link_type),
    CHECK (source_id != target_id)
);
CREATE INDEX idx_ticket_links_target ON ticket_links(target_id);

CREATE TABLE watchers (
    id INTEGER PRIMARY KEY,
    ticket_id INTEGER NOT NULL REFERENCES tickets(id),
    username TEXT NOT NULL REFERENCES users(username),
    UNIQUE (ticket_id, username)
);
CREATE INDEX idx_watchers_user ON watchers(username);

CREATE TABLE worklogs (
    id INTEGER PRIMARY KEY,
    ticket_id INTEGER NOT NULL REFERENCES tickets(id),
    author TEXT NOT NULL REFERENCES users(username),
    minutes INTEGER NOT NULL CHECK (minutes > 0),
    work_date TEXT NOT NULL,
    note TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX idx_worklogs_ticket ON worklogs(ticket_id);
"""
