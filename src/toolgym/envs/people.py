"""One deterministic population shared by every app, so multi-app tasks can join users across apps.

Every app seeds its user table from `population()`: the same username means the same person in
mail, drive, code_host and the rest.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from functools import cache

from faker import Faker

POPULATION_SEED = 20260615
POPULATION_SIZE = 120
EMAIL_DOMAIN = "example.com"


@dataclass(frozen=True)
class Person:
    username: str
    first_name: str
    last_name: str
    email: str
    phone: str
    city: str
    company: str

    @property
    def name(self) -> str:
        return f"{self.first_name} {self.last_name}"


@cache
def population(size: int = POPULATION_SIZE) -> tuple[Person, ...]:
    """The shared people, in a fixed order; usernames are unique lowercase `first.last` forms."""
    fake = Faker("en_US")
    fake.seed_instance(POPULATION_SEED)
    rng = random.Random(POPULATION_SEED)
    people: list[Person] = []
    used: set[str] = set()
    while len(people) < size:
        first, last = fake.first_name(), fake.last_name()
        base = f"{first}.{last}".lower().replace("'", "").replace(" ", "")
        username = base if base not in used else f"{base}{rng.randint(2, 99)}"
        if username in used:
            continue
        used.add(username)
        people.append(
            Person(
                username=username,
                first_name=first,
                last_name=last,
                email=f"{username}@{EMAIL_DOMAIN}",
                phone=f"+1-{rng.randint(200, 989)}-{rng.randint(200, 989)}-{rng.randint(1000, 9999)}",
                city=fake.city(),
                company=fake.company(),
            )
        )
    return tuple(people)


def person(username: str) -> Person:
    for p in population():
        if p.username == username:
            return p
    raise KeyError(f"no person with username {username!r}")
