"""Airline-support conversations as public tool-use datasets ship them: OpenAI chat format with
tool calls and a reward, and no ``tools`` list in the records. Deterministic from a seed.

Each conversation is multi-turn: the customer asks, the agent asks for what it needs, looks
things up (sometimes with a wrong id first, so a tool answers with an error), asks the
customer to confirm, acts, and closes. Some records carry no reward, some end on the
customer's last word without a closing answer.

    python -m tests.data.airline 200 > airline.jsonl
"""

from __future__ import annotations

import json
import random
import sys
from typing import Any

FIRST = ["Mia", "Noah", "Olivia", "Liam", "Emma", "Aarav", "Sofia", "Yusuf", "Chen", "Amelia", "Lucas", "Ivan"]
LAST = ["Li", "Garcia", "Kim", "Silva", "Rossi", "Khan", "Nguyen", "Smith", "Muller", "Sato", "Patel", "Moreau"]
AIRPORTS = ["JFK", "LAX", "SFO", "ORD", "SEA", "BOS", "ATL", "DFW", "MIA", "DEN", "EWR", "PHX"]
CABINS = ["basic_economy", "economy", "business"]
SYSTEM = ("You are an airline customer service agent. Help the user with bookings, changes, cancellations "
          "and baggage. Confirm with the user before any action that changes a booking.")


class _Conv:
    def __init__(self, rng: random.Random):
        self.rng, self.messages, self.n = rng, [{"role": "system", "content": SYSTEM}], 0

    def user(self, text: str) -> None:
        self.messages.append({"role": "user", "content": text})

    def say(self, text: str) -> None:
        self.messages.append({"role": "assistant", "content": text})

    def call(self, name: str, args: dict[str, Any], result: Any) -> None:
        self.n += 1
        cid = f"call_{self.n}_{self.rng.randrange(16**8):08x}"
        self.messages.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}]})
        self.messages.append({"role": "tool", "tool_call_id": cid,
                              "content": result if isinstance(result, str) else json.dumps(result)})


def _reservation(rng: random.Random) -> str:
    return "".join(rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ0123456789") for _ in range(6))


def _details(rng: random.Random, rid: str, user_id: str) -> dict[str, Any]:
    o, d = rng.sample(AIRPORTS, 2)
    return {"reservation_id": rid, "user_id": user_id, "origin": o, "destination": d,
            "flight_type": rng.choice(["one_way", "round_trip"]), "cabin": rng.choice(CABINS),
            "flights": [{"flight_number": f"HAT{rng.randrange(1, 300):03d}", "date": f"2024-05-{rng.randrange(10, 28)}",
                         "price": rng.randrange(80, 900)}],
            "passengers": rng.randrange(1, 4), "insurance": rng.choice(["yes", "no"])}


def conversation(i: int, seed: int = 0) -> dict[str, Any]:
    """The i-th conversation of the sample."""
    rng = random.Random(f"{seed}:{i}")
    first, last = rng.choice(FIRST), rng.choice(LAST)
    user_id = f"{first.lower()}_{last.lower()}_{rng.randrange(1000, 9999)}"
    rid = _reservation(rng)
    c = _Conv(rng)
    kind = ["cancel", "change_cabin", "baggage", "status"][(i // 2) % 4]  # two trials per task
    asks = {"cancel": "I need to cancel a trip, something came up.",
            "change_cabin": "Hi, can I upgrade my seat on an upcoming flight?",
            "baggage": "How many checked bags can I bring on my booking?",
            "status": "Can you tell me what's on my reservation?"}
    c.user(asks[kind])
    c.say("Sure, I can help with that. Could you give me your user id and the reservation number?")
    c.user(f"My user id is {user_id} and the booking is {rid}.")
    c.call("get_user_details", {"user_id": user_id},
           {"user_id": user_id, "name": {"first_name": first, "last_name": last},
            "membership": rng.choice(["regular", "silver", "gold"]), "reservations": [rid]})
    if rng.random() < 0.3:  # a typo first: the tool answers with an error
        typo = rid[:-1]
        c.call("get_reservation_details", {"reservation_id": typo},
               rng.choice([f"Error: reservation {typo} not found", {"error": f"Reservation {typo} not found"}]))
    details = _details(rng, rid, user_id)
    c.call("get_reservation_details", {"reservation_id": rid}, details)
    success = True
    if i % 11 == 6:  # handed over to a person: the record ends on the tool's answer, with no closing turn
        c.call("transfer_to_human_agents", {"summary": f"User {user_id} needs help with reservation {rid}."},
               "Transfer successful")
        kind = "transferred"
    if kind == "cancel":
        c.say(f"Your booking {rid} from {details['origin']} to {details['destination']} can be cancelled. "
              "Do you want me to go ahead? (yes/no)")
        c.user("Yes, please cancel it.")
        refused = details["cabin"] == "basic_economy" and details["insurance"] == "no"
        c.call("cancel_reservation", {"reservation_id": rid},
               "Error: basic economy reservations without insurance cannot be cancelled" if refused
               else {"reservation_id": rid, "status": "cancelled", "refund": details["flights"][0]["price"]})
        if refused:
            success = rng.random() < 0.5
            c.say("I'm sorry, this basic economy booking has no travel insurance, so it cannot be cancelled.")
        else:
            c.say("Done: the booking is cancelled and the refund goes back to your original payment method.")
    elif kind == "change_cabin":
        cabin = "business" if details["cabin"] != "business" else "economy"
        c.call("calculate", {"expression": f"{details['flights'][0]['price']} * 0.4"},
               {"result": round(details["flights"][0]["price"] * 0.4, 2)})
        c.say(f"Moving to {cabin} costs about {round(details['flights'][0]['price'] * 0.4, 2)} USD. Shall I proceed?")
        c.user("Yes, charge my card on file.")
        c.call("update_reservation_flights", {"reservation_id": rid, "cabin": cabin, "payment_id": f"credit_card_{rng.randrange(10**6)}",
                                              "flights": details["flights"]},
               {"reservation_id": rid, "cabin": cabin, "status": "updated"})
        success = rng.random() < 0.8
        c.say(f"Your reservation {rid} is now in {cabin}.")
    elif kind == "baggage":
        allowance = {"basic_economy": 0, "economy": 1, "business": 2}[details["cabin"]]
        c.say(f"Your {details['cabin'].replace('_', ' ')} ticket includes {allowance} free checked bag(s) per passenger.")
        c.user("And can I add two more?")
        c.call("update_reservation_baggages", {"reservation_id": rid, "total_baggages": allowance + 2,
                                               "nonfree_baggages": 2, "payment_id": "gift_card_123"},
               {"reservation_id": rid, "total_baggages": allowance + 2})
        c.say("Added two extra bags, 50 USD each, paid with your gift card.")
        success = rng.random() < 0.7
    elif kind == "status":
        c.say(f"Reservation {rid}: {details['origin']} to {details['destination']}, {details['cabin'].replace('_', ' ')}, "
              f"{details['passengers']} passenger(s), flight {details['flights'][0]['flight_number']} on {details['flights'][0]['date']}.")
    if i % 9 == 4 and kind != "transferred":  # the customer has the last word: no closing answer
        c.user("Ok thanks, bye.")
    rec: dict[str, Any] = {"messages": c.messages, "task": {"task_id": f"airline-{i // 2}"},
                           "model": "gpt-4o-2024-08-06"}
    if i % 7 != 3:  # some records have no reward
        rec["reward"] = 1.0 if success else 0.0
    return rec


def conversations(n: int = 200, seed: int = 0) -> list[dict[str, Any]]:
    """``n`` conversations, no ``tools`` list in any of them."""
    return [conversation(i, seed) for i in range(n)]


if __name__ == "__main__":
    for rec in conversations(int(sys.argv[1]) if len(sys.argv) > 1 else 200):
        print(json.dumps(rec))
