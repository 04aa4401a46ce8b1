"""SQL schema of the phone_support app: a mobile carrier's accounts and lines, and the customers' phones.

Two sides of one world (dual control): the agent's side is the account (plans, lines, bills,
payments, top-ups, roaming, suspensions, escalations); the user's side is the phone (`devices` and
`app_permissions`), one device per line. Verifiers check both. Money is whole US dollars
(INTEGER), data is GB, dates are ISO text. What a phone *shows* (service, internet, MMS) is not
stored: it is derived from device and line state by `rules.device_status`, so fixing either side
changes it with no counter to keep in sync.
"""

SCHEMA = """
CREATE TABLE users (
    id INTEGER PRIMARY KEY,
    username TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL,
    email TEXT NOT NULL,
    city TEXT NOT NULL
);

CREATE TABLE plans (
    id INTEGER PRIMARY KEY,
    code TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL UNIQUE,
    monthly_price INTEGER NOT NULL CHECK (monthly_price > 0),
    data_gb INTEGER CHECK (data_gb IS NULL OR data_gb > 0),  -- NULL: unlimited
    roaming_allowed INTEGER NOT NULL CHECK (roaming_allowed IN (0, 1)),
    available INTEGER NOT NULL CHECK (available IN (0, 1)),  -- 0: legacy, no new switches
    description TEXT NOT NULL
);

CREATE TABLE accounts (
    id INTEGER PRIMARY KEY,
    user_id INTEGER NOT NULL UNIQUE REFERENCES users(id),
    account_number TEXT NOT NULL UNIQUE,
    billing_day INTEGER NOT NULL CHECK (billing_day BETWEEN 1 AND 28),
    autopay INTEGER NOT NULL CHECK (autopay IN (0, 1)),
    opened_on TEXT NOT NULL
);

CREATE TABLE payment_methods (
    id INTEGER PRIMARY KEY,
    account_id INTEGER NOT NULL REFERENCES accounts(id),
    kind TEXT NOT NULL CHECK (kind IN ('visa', 'mastercard', 'amex', 'bank')),
    last4 TEXT NOT NULL,
    expires TEXT NOT NULL,  -- YYYY-MM
    is_default INTEGER NOT NULL CHECK (is_default IN (0, 1))
);
CREATE INDEX idx_payment_methods_account ON payment_methods(account_id);

CREATE TABLE lines (
    id INTEGER PRIMARY KEY,
    account_id INTEGER NOT NULL REFERENCES accounts(id),
    phone_number TEXT NOT NULL UNIQUE,
    digits TEXT NOT NULL UNIQUE,  -- the phone number's 11 digits, for lookups however it is written
    plan_id INTEGER NOT NULL REFERENCES plans(id),
    is_primary INTEGER NOT NULL CHECK (is_primary IN (0, 1)),
    status TEXT NOT NULL CHECK (status IN ('active', 'suspended')),
    suspension_reason TEXT CHECK (suspension_reason IN ('unpaid_bill', 'lost_or_stolen', 'customer_request')),
    suspended_on TEXT,
    roaming_enabled INTEGER NOT NULL CHECK (roaming_enabled IN (0, 1)),
    data_used_gb REAL NOT NULL CHECK (data_used_gb >= 0),
    topup_gb INTEGER NOT NULL DEFAULT 0 CHECK (topup_gb >= 0),
    activated_on TEXT NOT NULL,
    CHECK ((status = 'suspended') = (suspension_reason IS NOT NULL))
);
CREATE INDEX idx_lines_account ON lines(account_id);

CREATE TABLE devices (
    id INTEGER PRIMARY KEY,
    line_id INTEGER NOT NULL UNIQUE REFERENCES lines(id),
    model TEXT NOT NULL,
    supports_5g INTEGER NOT NULL CHECK (supports_5g IN (0, 1)),
    airplane_mode INTEGER NOT NULL CHECK (airplane_mode IN (0, 1)),
    mobile_data INTEGER NOT NULL CHECK (mobile_data IN (0, 1)),
    data_roaming INTEGER NOT NULL CHECK (data_roaming IN (0, 1)),
    network_mode TEXT NOT NULL CHECK (network_mode IN ('5g_4g_3g', '4g_3g', '3g_only', '2g_only')),
    apn_name TEXT NOT NULL,
    apn_mmsc TEXT NOT NULL,
    sim_status TEXT NOT NULL CHECK (sim_status IN ('seated', 'loose', 'damaged')),
    signal_bars INTEGER NOT NULL CHECK (signal_bars BETWEEN 1 AND 4),
    location_country TEXT NOT NULL
);

CREATE TABLE app_permissions (
    id INTEGER PRIMARY KEY,
    device_id INTEGER NOT NULL REFERENCES devices(id),
    app TEXT NOT NULL,
    permission TEXT NOT NULL,
    granted INTEGER NOT NULL CHECK (granted IN (0, 1)),
    UNIQUE (device_id, app, permission)
);

CREATE TABLE bills (
    id INTEGER PRIMARY KEY,
    account_id INTEGER NOT NULL REFERENCES accounts(id),
    period TEXT NOT NULL,  -- YYYY-MM: the month of service billed
    amount INTEGER NOT NULL CHECK (amount > 0),
    issued_on TEXT NOT NULL,
    due_date TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('paid', 'unpaid')),
    paid_on TEXT,
    UNIQUE (account_id, period),
    CHECK ((status = 'paid') = (paid_on IS NOT NULL))
);
CREATE INDEX idx_bills_account ON bills(account_id, status);

CREATE TABLE payments (
    id INTEGER PRIMARY KEY,
    reference TEXT NOT NULL UNIQUE,
    account_id INTEGER NOT NULL REFERENCES accounts(id),
    bill_id INTEGER NOT NULL REFERENCES bills(id),
    payment_method_id INTEGER NOT NULL REFERENCES payment_methods(id),
    amount INTEGER NOT NULL CHECK (amount > 0),
    paid_on TEXT NOT NULL
);
CREATE INDEX idx_payments_account ON payments(account_id);

CREATE TABLE data_topups (
    id INTEGER PRIMARY KEY,
    line_id INTEGER NOT NULL REFERENCES lines(id),
    gb INTEGER NOT NULL CHECK (gb IN (1, 3, 5)),
    price INTEGER NOT NULL CHECK (price > 0),
    payment_method_id INTEGER NOT NULL REFERENCES payment_methods(id),
    purchased_on TEXT NOT NULL
);
CREATE INDEX idx_data_topups_line ON data_topups(line_id);

CREATE TABLE line_events (
    id INTEGER PRIMARY KEY,
    line_id INTEGER NOT NULL REFERENCES lines(id),
    kind TEXT NOT NULL CHECK (kind IN ('activated', 'plan_change', 'roaming_on', 'roaming_off', 'topup',
                                       'suspended', 'resumed')),
    detail TEXT NOT NULL,
    created_on TEXT NOT NULL
);
CREATE INDEX idx_line_events_line ON line_events(line_id);

CREATE TABLE escalations (
    id INTEGER PRIMARY KEY,
    ticket TEXT NOT NULL UNIQUE,
    account_id INTEGER NOT NULL REFERENCES accounts(id),
    line_id INTEGER NOT NULL REFERENCES lines(id),
    summary TEXT NOT NULL,
    created_on TEXT NOT NULL
);
CREATE INDEX idx_escalations_account ON escalations(account_id);
"""
