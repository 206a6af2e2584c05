"""Realistic seed vocabularies for worlds: names, companies, event titles, places.

Fixed lists (no faker) so a world depends on nothing but its seed.
"""

from __future__ import annotations

import random

FIRST_NAMES = [
    "Maria", "James", "Aisha", "Wei", "Sofia", "Daniel", "Priya", "Lucas", "Emma", "Omar",
    "Hannah", "Mateo", "Chloe", "Kenji", "Isabel", "Noah", "Fatima", "Leo", "Grace", "Arjun",
    "Olivia", "Samuel", "Yuki", "Elena", "Tomas", "Nadia", "Ethan", "Lina", "Diego", "Zoe",
]
LAST_NAMES = [
    "Lopez", "Smith", "Khan", "Chen", "Rossi", "Miller", "Patel", "Silva", "Johnson", "Haddad",
    "Schmidt", "Garcia", "Martin", "Tanaka", "Fernandez", "Brown", "Ali", "Moreau", "Kim", "Sharma",
    "Wilson", "Okafor", "Sato", "Petrova", "Novak", "Hassan", "Clarke", "Berg", "Ruiz", "Nguyen",
]
# one-letter variants that make near-duplicates an agent must tell apart
NEAR_LAST = {
    "Lopez": "Lopes", "Smith": "Smyth", "Khan": "Kahn", "Chen": "Chan", "Rossi": "Rosi",
    "Miller": "Millar", "Patel": "Patil", "Silva": "Sylva", "Johnson": "Jonson", "Haddad": "Hadad",
    "Schmidt": "Schmitt", "Garcia": "Garza", "Martin": "Martins", "Tanaka": "Tanaca",
    "Fernandez": "Fernandes", "Brown": "Browne", "Ali": "Aly", "Moreau": "Moreaux", "Kim": "Kimm",
    "Sharma": "Sharman", "Wilson": "Willson", "Okafor": "Okafur", "Sato": "Saito", "Petrova": "Petrov",
    "Novak": "Nowak", "Hassan": "Hasan", "Clarke": "Clark", "Berg": "Borg", "Ruiz": "Ruis", "Nguyen": "Ngyuen",
}
COMPANIES = ["Acme", "Globex", "Initech", "Umbrella", "Stark Labs", "Wayne Co", "Hooli", "Vandelay"]
DOMAINS = ["gmail.com", "outlook.com", "proton.me", "yahoo.com", "fastmail.com"]
EVENT_TITLES = [
    "Team standup", "Dentist", "Lunch with Sam", "Project review", "Yoga class", "1:1 with manager",
    "Parent-teacher meeting", "Car service", "Coffee with Lina", "Budget planning", "Haircut",
    "Flight check-in", "Book club", "Gym", "Client call", "Design sync",
]
LOCATIONS = ["Office", "Downtown Clinic", "Cafe Rio", "Room 4B", "Home", "City Gym", "Zoom", ""]


def phone_number(rng: random.Random) -> str:
    """A US-style number in the reserved 555-01xx range, formatted as people type it."""
    return f"+1 {rng.choice(['415', '212', '312', '617', '206'])}-555-01{rng.randint(0, 99):02d}"


def email_for(first: str, last: str, rng: random.Random) -> str:
    """A plausible personal email address."""
    style = rng.randrange(3)
    local = [f"{first}.{last}", f"{first[0]}{last}", f"{first}{rng.randint(1, 99)}"][style]
    return f"{local.lower()}@{rng.choice(DOMAINS)}"

MESSAGE_TEXTS = [
    "Running 10 minutes late, sorry!", "Can you pick up milk on the way home?", "Happy birthday!!",
    "Are we still on for Saturday?", "Call me when you get a chance", "Thanks for dinner last night",
    "The package arrived", "Don't forget the keys", "Meeting moved to 3", "See you at the station",
]
REQUESTS = [  # what a user asks to text someone (public text of a message)
    "I'm running late, start without me", "the meeting moved to Thursday", "can you call me back tonight?",
    "I landed safely", "dinner is at 8", "I left the charger at your place",
]
NOTE_TITLES = ["Shopping list", "Gift ideas", "Packing list", "Books to read", "Wi-Fi password",
               "Recipe: lentil soup", "Meeting notes", "Car insurance", "Garden plan"]
NOTE_FOLDERS = ["Travel", "Work", "Recipes", "Home", "Receipts", "Kids"]
CLINICS = ["Downtown Clinic", "Bright Smile Dental", "City Eye Care", "Riverside Physio", "Northside Vet"]
