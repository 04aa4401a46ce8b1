"""Word lists the maps seed draws from: neighborhoods with real streets, fictional place names, review text.

Streets and neighborhoods are real (Boston, Cambridge, Somerville, Brookline) so addresses read like
the ones in mail invites; every business name is invented, so no model "knows" its rating or hours.
The company offices are where the mail app's meeting rooms (Room 4A, Boardroom, ...) are.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Neighborhood:
    name: str
    city: str
    zip_code: str
    lat: float
    lon: float
    streets: tuple[str, ...]


NEIGHBORHOODS: tuple[Neighborhood, ...] = (
    Neighborhood("Downtown", "Boston", "02108", 42.3555, -71.0605,
                 ("Washington Street", "Tremont Street", "Summer Street", "School Street", "Milk Street")),
    Neighborhood("Back Bay", "Boston", "02116", 42.3503, -71.0810,
                 ("Boylston Street", "Newbury Street", "Commonwealth Avenue", "Dartmouth Street")),
    Neighborhood("North End", "Boston", "02113", 42.3647, -71.0542,
                 ("Hanover Street", "Salem Street", "Prince Street", "Commercial Street")),
    Neighborhood("South End", "Boston", "02118", 42.3414, -71.0746,
                 ("Columbus Avenue", "Shawmut Avenue", "Tremont Street", "Union Park Street")),
    Neighborhood("Seaport", "Boston", "02210", 42.3510, -71.0450,
                 ("Seaport Boulevard", "Northern Avenue", "Congress Street", "Fan Pier Boulevard")),
    Neighborhood("Fenway", "Boston", "02215", 42.3429, -71.1003,
                 ("Brookline Avenue", "Peterborough Street", "Boylston Street", "Van Ness Street")),
    Neighborhood("Harvard Square", "Cambridge", "02138", 42.3736, -71.1190,
                 ("Massachusetts Avenue", "Brattle Street", "JFK Street", "Church Street")),
    Neighborhood("Central Square", "Cambridge", "02139", 42.3653, -71.1037,
                 ("Massachusetts Avenue", "Prospect Street", "River Street", "Green Street")),
    Neighborhood("Kendall Square", "Cambridge", "02142", 42.3625, -71.0862,
                 ("Main Street", "Broadway", "Ames Street", "Third Street")),
    Neighborhood("Inman Square", "Cambridge", "02139", 42.3742, -71.1007,
                 ("Cambridge Street", "Hampshire Street", "Springfield Street")),
    Neighborhood("Davis Square", "Somerville", "02144", 42.3967, -71.1226,
                 ("Holland Street", "Elm Street", "College Avenue", "Highland Avenue")),
    Neighborhood("Union Square", "Somerville", "02143", 42.3796, -71.0935,
                 ("Somerville Avenue", "Bow Street", "Webster Avenue", "Prospect Street")),
    Neighborhood("Assembly Row", "Somerville", "02145", 42.3925, -71.0775,
                 ("Assembly Row", "Foley Street", "Grand Union Boulevard", "Middlesex Avenue")),
    Neighborhood("Coolidge Corner", "Brookline", "02446", 42.3420, -71.1211,
                 ("Harvard Street", "Beacon Street", "Centre Street", "Pleasant Street")),
    Neighborhood("Brookline Village", "Brookline", "02445", 42.3328, -71.1167,
                 ("Washington Street", "Station Street", "Boylston Street", "Harvard Street")),
)

# (name, neighborhood, street number, street, detail): the company the mail app's people work for.
OFFICES: tuple[tuple[str, str, int, str], ...] = (
    ("Example HQ", "Kendall Square", 245, "Main Street"),
    ("Example Downtown Office", "Downtown", 100, "Summer Street"),
)
# Meeting rooms of mail calendar invites, all inside Example HQ: (alias, where in the building).
HQ_ROOMS: tuple[tuple[str, str], ...] = (
    ("Room 2C", "2nd floor, east wing"), ("Room 4A", "4th floor, west wing"), ("Room 5B", "5th floor"),
    ("Boardroom", "6th floor"), ("Huddle room 3", "3rd floor"), ("Training room", "ground floor, behind reception"),
    ("Cafeteria", "ground floor"), ("Main lobby", "ground floor, Main Street entrance"),
)

CUISINE_NAMES: dict[str, tuple[str, ...]] = {
    "italian": ("Trattoria Fiorella", "Osteria Lupo", "Nonna's Table", "Via Sorrento", "Pasta Lucina",
                "Il Forno Rosso"),
    "thai": ("Lemongrass House", "Bangkok Lantern", "Siam Orchid", "Basil & Chili", "Khao Soi Corner"),
    "japanese": ("Sakura Tei", "Umi Sushi Bar", "Ramen Kaze", "Izakaya Hoshi", "Tsuki Noodle House"),
    "mexican": ("La Cocina Roja", "Taqueria El Sol", "Casa Azul Cantina", "Mole Mercado", "Tortilla Verde"),
    "indian": ("Saffron Hall", "Tandoor Junction", "Masala Lane", "Chai & Curry House", "Spice Route Kitchen"),
    "american": ("Harbor Grill", "Beacon Burger Co.", "The Copper Kettle", "Redbrick Diner", "Sycamore Kitchen",
                 "Porchlight Eatery"),
    "chinese": ("Jade Garden", "Golden Dragon Noodle", "Lucky Bamboo", "Red Lantern Dumplings", "Peking Pavilion"),
    "seafood": ("Salt & Anchor", "Pier 9 Oyster Bar", "The Lobster Trap", "Harborline Fish House"),
    "vegetarian": ("Green Sprout Kitchen", "Root & Stem", "The Lentil Bowl", "Sunflower Table"),
    "french": ("Bistro Margaux", "Cafe Lumiere Brasserie", "Le Petit Moulin", "Chez Odette"),
    "mediterranean": ("Olive & Fig", "Aegean Table", "Cedar & Sumac", "Little Athens Grill"),
    "korean": ("Seoul Pot", "Bibimbap Bros", "Hanok Grill", "Kimchi Republic"),
}
CAFE_PREFIXES: tuple[str, ...] = (
    "Bluebird", "Thistle", "Fernwood", "Copperleaf", "Wren", "Maple Leaf", "Pinecone", "Driftwood", "Juniper",
    "Sparrow", "Marigold", "Cobalt", "Hearth", "Ember", "Quill", "Birchbark", "Saltbox", "Windmill", "Magpie",
    "Acorn", "Kettle Drum", "Morning Glory", "Little Owl", "Fog Lamp",
)
CAFE_SUFFIXES: tuple[str, ...] = ("Coffee", "Coffee Roasters", "Espresso Bar", "Cafe", "Coffee House")
BAKERIES: tuple[str, ...] = (
    "Crumb & Co.", "Rising Loaf Bakery", "Golden Crust Bakehouse", "Sugar & Salt Bakery", "Flour Mill Patisserie",
    "Morning Bun Bakery", "Little Oven Bakery", "Hearthstone Breads", "Sweet Rye Bakeshop", "Butter & Bloom Bakery",
)
BARS: tuple[str, ...] = (
    "The Salty Dog Tavern", "Brass Monkey Taproom", "The Copper Still", "The Gilded Anchor", "Night Owl Lounge",
    "Hops & Barley", "The Tipsy Fox", "Ironclad Brewing", "The Velvet Room", "Cask & Keg", "Foghorn Pub",
    "Lucky Clover Pub", "Red Door Tavern", "Wharf Rat Pub", "Old Lantern Bar", "The Drowsy Poet",
)
MUSEUMS: tuple[str, ...] = (
    "Harborlight Museum of Art", "Charles River Science Center", "Museum of Maritime Trades",
    "Gallery of Modern Design", "Toy & Game Museum", "Photography Museum of New England",
    "Letterpress & Type Museum", "Old Mill Textile Museum", "Museum of Urban Gardens", "Music Hall Museum",
    "Children's Discovery Museum", "Museum of Everyday Inventions",
)
PARKS: tuple[str, ...] = (
    "Elm Grove Park", "Riverbend Common", "Tannery Brook Park", "Cedar Hill Playground", "Willow Pond Park",
    "Harbor Walk Green", "Lilac Garden Park", "Millstone Park", "Quarry Hill Reservation", "Foundry Square Park",
)
PHARMACY_BRANDS: tuple[str, ...] = ("CareWell Pharmacy", "MedPlus Pharmacy", "Corner Apothecary",
                                    "HealthFirst Pharmacy")
GAS_BRANDS: tuple[str, ...] = ("QuickFuel", "Liberty Gas", "EverGreen Fuel")
SUPERMARKET_BRANDS: tuple[str, ...] = ("FreshMart", "Green Basket Market", "Harvest Foods")
GYM_BRANDS: tuple[str, ...] = ("IronWorks Gym", "Peak Fitness", "FlexZone")

# How many places of each kind a neighborhood gets: (min, max).
PLACE_COUNTS: dict[str, tuple[int, int]] = {
    "restaurant": (3, 4), "cafe": (1, 3), "bakery": (0, 1), "bar": (1, 2), "pharmacy": (1, 2),
    "gas_station": (0, 1), "supermarket": (1, 1), "gym": (0, 1), "park": (0, 1), "museum": (0, 1),
    "library": (0, 1),
}

REVIEW_TEXT: dict[str, dict[int, tuple[str, ...]]] = {
    "food": {
        5: ("Outstanding food and friendly staff.", "Best meal I've had in months.", "Everything was delicious."),
        4: ("Very good, a bit of a wait.", "Tasty dishes and a nice atmosphere.", "Solid spot, will be back."),
        3: ("Decent but nothing special.", "Good food, slow service.", "Okay for a quick bite."),
        2: ("Food was lukewarm.", "Overpriced for what you get.", "Service was disorganized."),
        1: ("Very disappointing visit.", "Wrong order and rude staff.", "Would not go again."),
    },
    "drink": {
        5: ("Perfect coffee and a cozy corner.", "Great drinks, great vibe.", "My favorite spot in the area."),
        4: ("Good drinks, friendly staff.", "Nice place to sit for an hour.", "Reliable and pleasant."),
        3: ("Fine, a bit crowded.", "Average drinks, good location.", "Okay but loud."),
        2: ("Long line and a bitter drink.", "Tables were sticky.", "Not worth the price."),
        1: ("Terrible service.", "Stale pastries and cold coffee.", "Never again."),
    },
    "visit": {
        5: ("A wonderful place to spend an afternoon.", "Beautifully kept and well run.", "A must-see."),
        4: ("Really enjoyed it.", "Well worth the visit.", "Nice, could use more benches."),
        3: ("Pleasant but small.", "Fine for an hour.", "Okay, a bit crowded on weekends."),
        2: ("Half of it was closed.", "Not well maintained.", "Disappointing for the price."),
        1: ("Dirty and poorly run.", "Waste of time.", "Staff were unhelpful."),
    },
    "errand": {
        5: ("Fast, friendly and well stocked.", "Always helpful staff.", "Quick in and out."),
        4: ("Good selection, short lines.", "Helpful staff, easy parking.", "Reliable."),
        3: ("Gets the job done.", "A bit slow at the counter.", "Fine, nothing special."),
        2: ("Long waits every time.", "Often out of stock.", "Staff seemed annoyed."),
        1: ("Worst service in town.", "Closed when it said open.", "Avoid."),
    },
}
REVIEW_KIND = {
    "restaurant": "food", "bakery": "food", "cafe": "drink", "bar": "drink", "museum": "visit", "park": "visit",
    "library": "visit", "gym": "visit", "pharmacy": "errand", "gas_station": "errand", "supermarket": "errand",
    "office": "visit",
}

# Custom saved lists and the categories they collect.
CUSTOM_LISTS: dict[str, tuple[str, ...]] = {
    "Coffee spots": ("cafe", "bakery"),
    "Date night": ("restaurant", "bar"),
    "Brunch": ("restaurant", "cafe", "bakery"),
    "Rainy day": ("museum", "library"),
    "Kid friendly": ("park", "museum", "library"),
    "Work lunches": ("restaurant",),
    "Weekend ideas": ("museum", "park", "bar"),
    "Visitors from out of town": ("museum", "restaurant", "park"),
}
LIST_NOTES: tuple[str, ...] = (
    "Try the tasting menu", "Great for groups", "Go early on weekends", "Ask for the patio",
    "Cash only", "Good for working", "Free entry on Thursdays", "Recommended by a coworker",
)
