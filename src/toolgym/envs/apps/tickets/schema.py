"""SQL schema of the tickets app: venues, performers, events with priced sections, orders, tickets, transfers.

Prices are whole US dollars per ticket (INTEGER), so answers and checks compare exact numbers. Dates are
ISO text (YYYY-MM-DD), times HH:MM local to the venue. A section's seats are numbered row by row; sold
seats are always the first `capacity - seats_available` of them, so a purchase's seats follow from the
counter alone. A ticket's `holder_id` is whoever holds it now: the buyer, or the recipient of an
accepted transfer.
"""

from toolgym.envs import kit

SCHEMA = f"""
{kit.POPULATION_USERS_TABLE}
{kit.CARDS_TABLE}
CREATE TABLE venues (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL CHECK (kind IN ('stadium', 'arena', 'theater', 'club', 'amphitheater')),
    city TEXT NOT NULL,
    state TEXT NOT NULL,
    address TEXT NOT NULL,
    capacity INTEGER NOT NULL CHECK (capacity > 0)
);
CREATE INDEX idx_venues_city ON venues(city);

CREATE TABLE performers (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    category TEXT NOT NULL CHECK (category IN ('concert', 'sports', 'theater', 'comedy', 'family')),
    genre TEXT NOT NULL
);

CREATE TABLE events (
    id INTEGER PRIMARY KEY,
    title TEXT NOT NULL,
    performer_id INTEGER NOT NULL REFERENCES performers(id),
    venue_id INTEGER NOT NULL REFERENCES venues(id),
    date TEXT NOT NULL,
    start_time TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('on_sale', 'sold_out', 'cancelled')),
    max_per_order INTEGER NOT NULL CHECK (max_per_order BETWEEN 1 AND 10),
    UNIQUE (performer_id, date)
);
CREATE INDEX idx_events_date ON events(date, start_time);
CREATE INDEX idx_events_venue_date ON events(venue_id, date);

CREATE TABLE sections (
    id INTEGER PRIMARY KEY,
    event_id INTEGER NOT NULL REFERENCES events(id),
    name TEXT NOT NULL,
    price_tier TEXT NOT NULL CHECK (price_tier IN ('premium', 'standard', 'value')),
    price INTEGER NOT NULL CHECK (price > 0),
    row_count INTEGER NOT NULL CHECK (row_count > 0),
    seats_per_row INTEGER NOT NULL CHECK (seats_per_row > 0),
    capacity INTEGER NOT NULL CHECK (capacity = row_count * seats_per_row),
    seats_available INTEGER NOT NULL CHECK (seats_available BETWEEN 0 AND capacity),
    UNIQUE (event_id, name),
    UNIQUE (event_id, price)
);
CREATE INDEX idx_sections_event ON sections(event_id, price);

CREATE TABLE orders (
    id INTEGER PRIMARY KEY,
    code TEXT NOT NULL UNIQUE,
    user_id INTEGER NOT NULL REFERENCES users(id),
    event_id INTEGER NOT NULL REFERENCES events(id),
    section_id INTEGER NOT NULL REFERENCES sections(id),
    quantity INTEGER NOT NULL CHECK (quantity BETWEEN 1 AND 10),
    unit_price INTEGER NOT NULL CHECK (unit_price > 0),
    total_price INTEGER NOT NULL CHECK (total_price = unit_price * quantity),
    payment_method_id INTEGER NOT NULL REFERENCES payment_methods(id),
    status TEXT NOT NULL CHECK (status IN ('confirmed', 'refunded')),
    ordered_on TEXT NOT NULL,
    refunded_on TEXT
);
CREATE INDEX idx_orders_user ON orders(user_id);
CREATE INDEX idx_orders_event ON orders(event_id);

CREATE TABLE transfers (
    id INTEGER PRIMARY KEY,
    code TEXT NOT NULL UNIQUE,
    order_id INTEGER NOT NULL REFERENCES orders(id),
    from_user_id INTEGER NOT NULL REFERENCES users(id),
    to_user_id INTEGER NOT NULL REFERENCES users(id),
    ticket_count INTEGER NOT NULL CHECK (ticket_count > 0),
    status TEXT NOT NULL CHECK (status IN ('pending', 'accepted', 'cancelled')),
    created_on TEXT NOT NULL,
    responded_on TEXT,
    CHECK (from_user_id != to_user_id)
);
CREATE INDEX idx_transfers_from ON transfers(from_user_id, status);
CREATE INDEX idx_transfers_to ON transfers(to_user_id, status);
CREATE INDEX idx_transfers_order ON transfers(order_id);

CREATE TABLE tickets (
    id INTEGER PRIMARY KEY,
    order_id INTEGER NOT NULL REFERENCES orders(id),
    section_id INTEGER NOT NULL REFERENCES sections(id),
    row_number INTEGER NOT NULL CHECK (row_number > 0),
    seat_number INTEGER NOT NULL CHECK (seat_number > 0),
    holder_id INTEGER NOT NULL REFERENCES users(id),
    status TEXT NOT NULL CHECK (status IN ('valid', 'transfer_pending', 'refunded')),
    transfer_id INTEGER REFERENCES transfers(id),
    UNIQUE (section_id, row_number, seat_number)
);
CREATE INDEX idx_tickets_order ON tickets(order_id);
CREATE INDEX idx_tickets_holder ON tickets(holder_id);
CREATE INDEX idx_tickets_transfer ON tickets(transfer_id);
"""
