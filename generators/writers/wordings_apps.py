"""Template wordings of the variants that put the wallet, shop, travel, media, files, calls
and clock apps to work (three wordings per variant)."""

from __future__ import annotations

WORDINGS: dict[str, dict[str, str]] = {
    "F01": {
        "set_timer.direct": "Set a {minutes}-minute timer called \"{label}\".",
        "set_timer.casual": "Can you start a timer for {minutes} minutes? Label it {label}.",
        "set_timer.terse": "Timer {minutes} min: {label}",
        "build_playlist.direct": "Make a new playlist called \"{name}\" with {songs}, in that order.",
        "build_playlist.casual": "I want a playlist named {name}: put {songs} on it, that order.",
        "build_playlist.terse": "New playlist \"{name}\": {songs}",
        "order_product.direct": "Order {quantity} of the {item} for me.",
        "order_product.casual": "Could you buy {quantity} {item} from the shop? Exactly that product.",
        "order_product.terse": "Shop order: {item} x{quantity}",
    },
    "F02": {
        "spend_category.direct": "How much have I spent on {category} since {since}?",
        "spend_category.casual": "Roughly? No, exactly: what did {category} cost me since {since}, in USD?",
        "spend_category.terse": "Total {category} spending since {since}?",
        "missed_caller.direct": "What number was my most recent missed call from?",
        "missed_caller.casual": "Someone just tried to call me and I missed it. What was their number?",
        "missed_caller.terse": "Number of last missed call?",
        "trip_weather.direct": "What's the forecast high in {city} on the day my trip there starts?",
        "trip_weather.casual": "How warm will it get in {city} the day I arrive for my trip? Just the high in C.",
        "trip_weather.terse": "Forecast high, {city}, first trip day?",
    },
    "F04": {
        "call_back.direct": "Call back the number that just missed-called me.",
        "call_back.casual": "I missed a call a moment ago, can you ring them back?",
        "call_back.terse": "Return the last missed call.",
        "cancel_or_return.direct": "I don't want the {item} I ordered: cancel it, or return it if it already came.",
        "cancel_or_return.casual": "Changed my mind about the {item} order. Cancel or send it back, whichever works.",
        "cancel_or_return.terse": "Undo {item} order (cancel or return).",
        "photo_text.direct": "What is the Wi-Fi password in the photo I took of the router label?",
        "photo_text.casual": "I snapped the router's sticker earlier, what's the Wi-Fi password on it?",
        "photo_text.terse": "Wi-Fi password from my router photo?",
    },
    "F05": {
        "pay_confirm.direct": "Send {name} ${amount:.2f} for {reason}.",
        "pay_confirm.casual": "Pay {name} back ${amount:.2f}, it's for {reason}.",
        "pay_confirm.terse": "Wallet: {name} ${amount:.2f} ({reason})",
        "ambiguous_playlist.direct": "Add \"{song}\" to my {word} playlist.",
        "ambiguous_playlist.casual": "Put {song} on the {word} playlist, would you?",
        "ambiguous_playlist.terse": "Playlist {word} += {song}",
        "cancel_shipped.direct": "Cancel my {item} order.",
        "cancel_shipped.casual": "I don't need the {item} anymore, please cancel that order.",
        "cancel_shipped.terse": "Cancel order: {item}",
    },
    "F06": {
        "receipt_to_expense.direct": "Log the {merchant} receipt I photographed today as a {category} expense.",
        "receipt_to_expense.casual": "I took a picture of today's {merchant} receipt, add it to my expenses under {category}.",
        "receipt_to_expense.terse": "Expense from today's {merchant} receipt photo ({category})",
        "missed_to_contact.direct": "Save the number of my most recent missed call as a contact named {name}.",
        "missed_to_contact.casual": "That missed call just now was {name}, save their number in my contacts.",
        "missed_to_contact.terse": "New contact {name} = last missed caller's number",
        "trip_plan.direct": "For my trip to {city}, write a note \"Trip to {city}\" with the {mode} time from "
                            "{origin} to the Airport and the weather there on the day I leave.",
        "trip_plan.casual": "Help me plan {city}: note down how long {mode} takes from {origin} to the Airport "
                            "and the forecast for my departure day, title it \"Trip to {city}\".",
        "trip_plan.terse": "Note \"Trip to {city}\": {mode} {origin}->Airport minutes + {city} weather on departure",
    },
}
