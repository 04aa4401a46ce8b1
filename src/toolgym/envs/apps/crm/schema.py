"""SQL schema of the crm app: users (the sales team), companies, contacts, pipeline stages, deals,
activities and reminders.

Amounts are whole US dollars (INTEGER) so answers and checks compare exact numbers; dates are ISO
text (YYYY-MM-DD). A deal's `status` mirrors its stage (open stages, 'Closed Won', 'Closed Lost'):
the stage says where it is, the status lets "open deals" be one indexed filter.
"""

SCHEMA = """
CREATE TABLE users (
    id INTEGER PRIMARY KEY,
    username TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL,
    email TEXT NOT NULL,
    phone TEXT NOT NULL,
    role TEXT NOT NULL CHECK (role IN ('sales_rep', 'sales_manager', 'staff')),
    title TEXT NOT NULL
);

CREATE TABLE companies (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE COLLATE NOCASE,
    domain TEXT NOT NULL UNIQUE,
    industry TEXT NOT NULL,
    employees INTEGER NOT NULL CHECK (employees > 0),
    city TEXT NOT NULL,
    owner_id INTEGER NOT NULL REFERENCES users(id),
    created_on TEXT NOT NULL
);
CREATE INDEX idx_companies_owner ON companies(owner_id);
CREATE INDEX idx_companies_industry ON companies(industry);

CREATE TABLE contacts (
    id INTEGER PRIMARY KEY,
    company_id INTEGER NOT NULL REFERENCES companies(id),
    first_name TEXT NOT NULL,
    last_name TEXT NOT NULL,
    email TEXT NOT NULL UNIQUE COLLATE NOCASE,
    phone TEXT,
    job_title TEXT,
    lifecycle_stage TEXT NOT NULL CHECK (lifecycle_stage IN (
        'subscriber', 'lead', 'marketing_qualified_lead', 'sales_qualified_lead', 'opportunity',
        'customer', 'evangelist')),
    owner_id INTEGER NOT NULL REFERENCES users(id),
    created_on TEXT NOT NULL
);
CREATE INDEX idx_contacts_company ON contacts(company_id);
CREATE INDEX idx_contacts_owner ON contacts(owner_id);
CREATE INDEX idx_contacts_name ON contacts(last_name, first_name);

CREATE TABLE pipeline_stages (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE COLLATE NOCASE,
    position INTEGER NOT NULL UNIQUE CHECK (position > 0),
    win_probability INTEGER NOT NULL CHECK (win_probability BETWEEN 0 AND 100),
    outcome TEXT NOT NULL CHECK (outcome IN ('open', 'won', 'lost'))
);

CREATE TABLE deals (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE COLLATE NOCASE,
    company_id INTEGER NOT NULL REFERENCES companies(id),
    contact_id INTEGER REFERENCES contacts(id),
    amount INTEGER NOT NULL CHECK (amount > 0),
    stage_id INTEGER NOT NULL REFERENCES pipeline_stages(id),
    status TEXT NOT NULL CHECK (status IN ('open', 'won', 'lost')),
    close_date TEXT NOT NULL,
    owner_id INTEGER NOT NULL REFERENCES users(id),
    created_on TEXT NOT NULL,
    closed_on TEXT,
    lost_reason TEXT CHECK (lost_reason IN ('price', 'competitor', 'no_budget', 'timing', 'no_decision')),
    CHECK ((status = 'open') = (closed_on IS NULL)),
    CHECK ((status = 'lost') = (lost_reason IS NOT NULL))
);
CREATE INDEX idx_deals_company ON deals(company_id);
CREATE INDEX idx_deals_owner_status ON deals(owner_id, status, close_date);
CREATE INDEX idx_deals_stage ON deals(stage_id);

CREATE TABLE activities (
    id INTEGER PRIMARY KEY,
    kind TEXT NOT NULL CHECK (kind IN ('call', 'email', 'meeting', 'note')),
    summary TEXT NOT NULL,
    contact_id INTEGER REFERENCES contacts(id),
    deal_id INTEGER REFERENCES deals(id),
    user_id INTEGER NOT NULL REFERENCES users(id),
    occurred_on TEXT NOT NULL,
    created_on TEXT NOT NULL,
    CHECK (contact_id IS NOT NULL OR deal_id IS NOT NULL)
);
CREATE INDEX idx_activities_contact ON activities(contact_id, occurred_on);
CREATE INDEX idx_activities_deal ON activities(deal_id, occurred_on);

CREATE TABLE reminders (
    id INTEGER PRIMARY KEY,
    title TEXT NOT NULL,
    due_date TEXT NOT NULL,
    assignee_id INTEGER NOT NULL REFERENCES users(id),
    contact_id INTEGER REFERENCES contacts(id),
    deal_id INTEGER REFERENCES deals(id),
    done INTEGER NOT NULL DEFAULT 0 CHECK (done IN (0, 1)),
    done_on TEXT,
    created_by INTEGER NOT NULL REFERENCES users(id),
    created_on TEXT NOT NULL,
    CHECK ((done = 1) = (done_on IS NOT NULL))
);
CREATE INDEX idx_reminders_assignee ON reminders(assignee_id, done, due_date);
"""
