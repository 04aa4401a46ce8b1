"""Offer task families: offer on a named home, raise an open offer, and the offers that cannot be made."""

from __future__ import annotations

import random
from typing import Any

from toolgym.envs import TaskDraft, World, kit
from toolgym.envs.apps.homes.rules import MIN_OFFER_PERCENT, min_offer
from toolgym.envs.apps.homes.task_common import (
    active_users,
    has_open_offer,
    listing_lookup,
    listings,
    offer_checks,
)
from toolgym.schema import ExpectedChange, FieldEquals, ToolCall

TEXTS = kit.module_texts(__file__)


def _short(amount: int) -> str:
    """'$415k' where the amount is whole thousands, as people write bids."""
    return f"${amount // 1000}k" if amount % 1000 == 0 else kit.money(amount)


def make_named_offer(rng: random.Random, world: World) -> TaskDraft | None:
    """A single write: an open offer of the named amount (at least the minimum) on an active listing."""
    home = rng.choice(listings(world, "l.status='active'"))
    floor = -(-min_offer(home["price"]) // 1000) * 1000
    amount = max(floor, round(home["price"] * rng.uniform(0.9, 1.01) / 1000) * 1000)
    user = rng.choice(active_users(world))
    if has_open_offer(world, user["id"], home["id"]):
        return None
    check, expected = offer_checks(user["id"], home["id"], amount)
    phrasing, prompt = kit.phrase(
        rng, TEXTS["OFFER"], amount=kit.money(amount), short=_short(amount), address=home["address"],
        city=home["city"])
    return TaskDraft(
        prompt=prompt,
        checks=[check, kit.diff_only([expected]), kit.answer_has([home["address"]], label="answer names the home")],
        reference_solution=[listing_lookup(home), kit.call("make_offer", listing_id=home["id"], amount=amount)],
        env_variables=kit.env_for(user, kit.random_day(rng)),
        expected_answer=(f"Your offer of ${amount} on {home['address']} (asking ${home['price']}) is submitted and "
                         "open."),
        difficulty=1,
        metadata={"phrasing": phrasing, "listing_id": home["id"], "amount": amount},
    )


def _refused_offer(rng: random.Random, world: World, texts_key: str, home: dict[str, Any], amount: int,
                   lookups: list[ToolCall], answer: str, **facts: Any) -> TaskDraft:
    """An offer the rules forbid: an active buyer asks, the agent looks, makes no offer and says why."""
    phrasing, prompt = kit.phrase(
        rng, TEXTS[texts_key], amount=kit.money(amount), short=_short(amount), address=home["address"],
        city=home["city"])
    return TaskDraft(
        prompt=prompt,
        checks=kit.impossible_checks("make_offer"),
        reference_solution=lookups,
        env_variables=kit.env_for(rng.choice(active_users(world)), kit.random_day(rng)),
        expected_answer=answer,
        difficulty=2,
        metadata={"phrasing": phrasing, "listing_id": home["id"], **facts, "amount": amount},
    )


def offer_off_market_impossible(rng: random.Random, world: World) -> TaskDraft | None:
    """The home is pending or sold: no offer can be made, so the agent must refuse and change nothing."""
    home = rng.choice(listings(world, "l.status != 'active'"))
    amount = round(home["price"] * rng.uniform(0.95, 1.03) / 1000) * 1000
    state = "under contract (pending)" if home["status"] == "pending" else "already sold"
    answer = f"I cannot make an offer on {home['address']}: it is {state}, and offers can only be made on active listings."
    return _refused_offer(rng, world, "OFF_MARKET_OFFER", home, amount,
                          [listing_lookup(home), kit.call("get_listing", listing_id=home["id"])], answer,
                          listing_status=home["status"])


def offer_too_low_impossible(rng: random.Random, world: World) -> TaskDraft | None:
    """The named amount is under the minimum share of the asking price: refuse, make no offer."""
    home = rng.choice(listings(world, "l.status='active'"))
    amount = int(home["price"] * rng.uniform(0.7, 0.88) / 5000) * 5000
    floor = min_offer(home["price"])
    if amount >= floor:
        return None
    answer = (f"I cannot submit an offer of ${amount} on {home['address']}: offers must be at least "
              f"{MIN_OFFER_PERCENT}% of the asking price (${home['price']}), so at least ${floor}.")
    return _refused_offer(rng, world, "LOWBALL", home, amount, [listing_lookup(home)], answer)


def raise_offer(rng: random.Random, world: World) -> TaskDraft | None:
    """Two writes under the one-open-offer rule: withdraw the open offer, then offer the higher amount."""
    offers = world.query(
        "SELECT o.*, l.address, l.price, c.name AS city FROM offers o JOIN listings l ON l.id = o.listing_id "
        "JOIN cities c ON c.id = l.city_id WHERE o.status='open' AND l.status='active' ORDER BY o.id")
    offer = rng.choice(offers)
    step = rng.choice([2000, 5000, 10000, 15000, 20000, 25000])
    new = offer["amount"] + step
    user = kit.user_by_id(world, offer["buyer_id"])
    check, expected = offer_checks(user["id"], offer["listing_id"], new, weight=2.0)
    phrasing, prompt = kit.phrase(
        rng, TEXTS["RAISE"], address=offer["address"], city=offer["city"], step=kit.money(step),
        old=kit.money(offer["amount"]), new=kit.money(new))
    return TaskDraft(
        prompt=prompt,
        checks=[
            FieldEquals(table="offers", where={"id": offer["id"]}, field="status", value="withdrawn", weight=2.0,
                        label=f"old offer {offer['id']} withdrawn"),
            check,
            kit.diff_only([ExpectedChange(table="offers", op="update", where={"id": offer["id"]},
                                      fields=["status", "closed_on"]), expected]),
            kit.answer_has([str(new)], label="answer gives the new amount"),
        ],
        reference_solution=[kit.call("list_my_offers", status="open"), kit.call("withdraw_offer", offer_id=offer["id"]),
                            kit.call("make_offer", listing_id=offer["listing_id"], amount=new)],
        env_variables=kit.env_for(user, kit.random_day(rng)),
        expected_answer=(f"I withdrew your ${offer['amount']} offer on {offer['address']} and submitted a new offer "
                         f"of ${new}."),
        difficulty=3,
        metadata={"phrasing": phrasing, "offer_id": offer["id"], "amount": new},
    )
