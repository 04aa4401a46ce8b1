"""SQL schema of the forum app: communities, memberships, posts, threaded comments, votes, moderation.

Scores and karma are stored aggregates (the wider site votes too); the `votes` table holds only
the votes of known users, one per user and item, so "vote twice" is a rule the tools can enforce.
"""

SCHEMA = """
CREATE TABLE users (
    id INTEGER PRIMARY KEY,
    username TEXT NOT NULL UNIQUE,
    display_name TEXT NOT NULL,
    email TEXT NOT NULL,
    karma INTEGER NOT NULL DEFAULT 0,
    joined_on TEXT NOT NULL
);

CREATE TABLE communities (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    description TEXT NOT NULL,
    visibility TEXT NOT NULL CHECK (visibility IN ('public', 'private')),
    flair_required INTEGER NOT NULL DEFAULT 0,
    created_on TEXT NOT NULL
);

CREATE TABLE community_rules (
    id INTEGER PRIMARY KEY,
    community_id INTEGER NOT NULL REFERENCES communities(id),
    number INTEGER NOT NULL,
    title TEXT NOT NULL,
    description TEXT NOT NULL,
    UNIQUE (community_id, number)
);

CREATE TABLE flairs (
    id INTEGER PRIMARY KEY,
    community_id INTEGER NOT NULL REFERENCES communities(id),
    name TEXT NOT NULL,
    UNIQUE (community_id, name)
);

CREATE TABLE memberships (
    id INTEGER PRIMARY KEY,
    community_id INTEGER NOT NULL REFERENCES communities(id),
    user_id INTEGER NOT NULL REFERENCES users(id),
    role TEXT NOT NULL CHECK (role IN ('member', 'moderator')),
    joined_on TEXT NOT NULL,
    UNIQUE (community_id, user_id)
);
CREATE INDEX memberships_user ON memberships(user_id);

CREATE TABLE posts (
    id INTEGER PRIMARY KEY,
    community_id INTEGER NOT NULL REFERENCES communities(id),
    author_id INTEGER NOT NULL REFERENCES users(id),
    title TEXT NOT NULL,
    body TEXT NOT NULL,
    created_on TEXT NOT NULL,
    score INTEGER NOT NULL DEFAULT 0,
    flair_id INTEGER REFERENCES flairs(id),
    removed INTEGER NOT NULL DEFAULT 0 CHECK (removed IN (0, 1)),
    removed_reason TEXT
);
CREATE INDEX posts_community_created ON posts(community_id, created_on);
CREATE INDEX posts_author ON posts(author_id, created_on);

CREATE TABLE comments (
    id INTEGER PRIMARY KEY,
    post_id INTEGER NOT NULL REFERENCES posts(id),
    parent_id INTEGER REFERENCES comments(id),
    author_id INTEGER NOT NULL REFERENCES users(id),
    body TEXT NOT NULL,
    created_on TEXT NOT NULL,
    score INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX comments_post ON comments(post_id, score);
CREATE INDEX comments_author ON comments(author_id);

CREATE TABLE votes (
    id INTEGER PRIMARY KEY,
    user_id INTEGER NOT NULL REFERENCES users(id),
    post_id INTEGER REFERENCES posts(id),
    comment_id INTEGER REFERENCES comments(id),
    value INTEGER NOT NULL CHECK (value IN (-1, 1)),
    created_on TEXT NOT NULL,
    CHECK ((post_id IS NULL) != (comment_id IS NULL))
);
CREATE UNIQUE INDEX votes_user_post ON votes(user_id, post_id) WHERE post_id IS NOT NULL;
CREATE UNIQUE INDEX votes_user_comment ON votes(user_id, comment_id) WHERE comment_id IS NOT NULL;

CREATE TABLE reports (
    id INTEGER PRIMARY KEY,
    post_id INTEGER NOT NULL REFERENCES posts(id),
    reporter_id INTEGER NOT NULL REFERENCES users(id),
    rule_id INTEGER REFERENCES community_rules(id),
    reason TEXT NOT NULL,
    created_on TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'actioned', 'dismissed')),
    UNIQUE (post_id, reporter_id)
);
CREATE INDEX reports_post ON reports(post_id, status);

CREATE TABLE bans (
    id INTEGER PRIMARY KEY,
    community_id INTEGER NOT NULL REFERENCES communities(id),
    user_id INTEGER NOT NULL REFERENCES users(id),
    moderator_id INTEGER NOT NULL REFERENCES users(id),
    reason TEXT NOT NULL,
    created_on TEXT NOT NULL,
    expires_on TEXT,
    UNIQUE (community_id, user_id)
);

CREATE TABLE moderation_actions (
    id INTEGER PRIMARY KEY,
    community_id INTEGER NOT NULL REFERENCES communities(id),
    moderator_id INTEGER NOT NULL REFERENCES users(id),
    action TEXT NOT NULL CHECK (action IN ('remove_post', 'ban_user')),
    post_id INTEGER REFERENCES posts(id),
    target_user_id INTEGER REFERENCES users(id),
    reason TEXT NOT NULL,
    created_on TEXT NOT NULL
);
CREATE INDEX moderation_actions_community ON moderation_actions(community_id, created_on);
"""
