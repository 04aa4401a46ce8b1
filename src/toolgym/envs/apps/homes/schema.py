"""SQL schema of the homes app: cities, agents, listings with their price history, and what users do.

Prices are whole US dollars (INTEGER) so answers and checks compare exact numbers; dates are ISO
text (YYYY-MM-DD) and tour times HH:MM on the hour. A listing's status is stored; whether a tour
is past or upcoming is computed from CURRENT_DATE, so the seed stays valid for every task date.
Partial unique indexes make the two "only one" rules (one scheduled tour per slot, one open offer
per buyer and listing) hold in the database itself, not only in the tools.
"""

from toolgym.envs import kit

SCHEMA = f"""
{kit.POPULATION_USERS_TABLE}
CREATE TABLE cities (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    state TEXT NOT NULL
);

CREATE TABLE agents (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    brokerage TEXT NOT NULL,
    city_id INTEGER NOT NULL REFERENCES cities(id),
    phone TEXT NOT NULL,
    email TEXT NOT NULL UNIQUE,
    rating REAL NOT NULL CHECK (rating BETWEEN 1 AND 5),
    review_count INTEGER NOT NULL CHECK (review_count >= 0),
    years_experience INTEGER NOT NULL CHECK (years_experience >= 0)
);
CREATE INDEX idx_agents_city ON agents(city_id);

CREATE TABLE listings (
    id INTEGER PRIMARY KEY,
    address TEXT NOT NULL,
    city_id INTEGER NOT NULL REFERENCES cities(id),
    zip TEXT NOT NULL,
    price INTEGER NOT NULL CHECK (price > 0),
    beds INTEGER NOT NULL CHECK (beds BETWEEN 0 AND 10),
    baths REAL NOT NULL CHECK (baths > 0),
    sqft INTEGER NOT NULL CHECK (sqft > 0),
    home_type TEXT NOT NULL CHECK (home_type IN ('house', 'condo', 'townhouse', 'multi_family')),
    year_built INTEGER NOT NULL,
    hoa_fee INTEGER NOT NULL DEFAULT 0 CHECK (hoa_fee >= 0),
    status TEXT NOT NULL CHECK (status IN ('active', 'pending', 'sold')),
    listed_on TEXT NOT NULL,
    status_changed_on TEXT,
    sold_price INTEGER CHECK (sold_price > 0),
    agent_id INTEGER NOT NULL REFERENCES agents(id),
    description TEXT NOT NULL,
    UNIQUE (address, city_id),
    CHECK ((status = 'active') = (status_changed_on IS NULL)),
    CHECK ((status = 'sold') = (sold_price IS NOT NULL))
);
CREATE INDEX idx_listings_search ON listings(city_id, status, price);
CREATE INDEX idx_listings_agent ON listings(agent_id, status);

CREATE TABLE price_history (
    id INTEGER PRIMARY KEY,
    listing_id INTEGER NOT NULL REFERENCES listings(id),
    date TEXT NOT NULL,
    event TEXT NOT NULL CHECK (event IN ('listed', 'price_change', 'pending', 'sold')),
    price INTEGER NOT NULL CHECK (price > 0)
);
CREATE INDEX idx_price_history_listing ON price_history(listing_id, date);

CREATE TABLE saved_homes (
    id INTEGER PRIMARY KEY,
    user_id INTEGER NOT NULL REFERENCES users(id),
    listing_id INTEGER NOT NULL REFERENCES listings(id),
    saved_on TEXT NOT NULL,
    UNIQUE (user_id, listing_id)
);

CREATE TABLE saved_searches (
    id INTEGER PRIMARY KEY,
    user_id INTEGER NOT NULL REFERENCES users(id),
    name TEXT NOT NULL,
    city_id INTEGER NOT NULL REFERENCES cities(id),
    max_price INTEGER CHECK (max_price > 0),
    min_beds INTEGER CHECK (min_beds BETWEEN 1 AND 8),
    home_type TEXT CHECK (home_type IN ('house', 'condo', 'townhouse', 'multi_family')),
    created_on TEXT NOT NULL
);
CREATE INDEX idx_saved_searches_user ON saved_searches(user_id);

CREATE TABLE tours (
    id INTEGER PRIMARY KEY,
    listing_id INTEGER NOT NULL REFERENCES listings(id),
    user_id INTEGER NOT NULL REFERENCES users(id),
    date TEXT NOT NULL,
    time TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('scheduled', 'cancelled')),
    requested_on TEXT NOT NULL,
    cancelled_on TEXT,
    CHECK (requested_on < date)
);
CREATE INDEX idx_tours_listing_date ON tours(listing_id, date, time);
CREATE INDEX idx_tours_user_date ON tours(user_id, date, time);
CREATE UNIQUE INDEX idx_tours_one_per_slot ON tours(listing_id, date, time) WHERE status = 'scheduled';

CREATE TABLE offers (
    id INTEGER PRIMARY KEY,
    listing_id INTEGER NOT NULL REFERENCES listings(id),
    buyer_id INTEGER NOT NULL REFERENCES users(id),
    amount INTEGER NOT NULL CHECK (amount > 0),
    status TEXT NOT NULL CHECK (status IN ('open', 'accepted', 'rejected', 'withdrawn')),
    offered_on TEXT NOT NULL,
    closed_on TEXT
);
CREATE INDEX idx_offers_buyer ON offers(buyer_id);
CREATE INDEX idx_offers_listing ON offers(listing_id);
CREATE UNIQUE INDEX idx_offers_one_open ON offers(listing_id, buyer_id) WHERE status = 'open';
"""
