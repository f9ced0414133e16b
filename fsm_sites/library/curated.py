"""The curated library's recipes (hand-picked content per domain).

The YAML files under ``sites/`` are generated from these by
``python -m fsm_sites.library.curated`` and checked in, so they can be read and
served without the generator. Change a site by editing its recipe and
regenerating, not by editing its YAML: ``tests/fsm_sites/test_library.py`` fails
when a file differs from what its recipe gives.
"""

from __future__ import annotations

import sys
from pathlib import Path

from fsm_sites.generator.compose import (
    BookingsPart,
    CatalogPart,
    FoldersPart,
    FormPart,
    ModalPart,
    RankPart,
    SettingsPart,
    SiteRecipe,
    TablePart,
    WizardPart,
    compose,
)
from fsm_sites.generator.structured import RowAction
from fsm_sites.generator.templates import FormField as F
from fsm_sites.generator.templates import Item as I  # noqa: E741
from fsm_sites.generator.widgets import FaqPart, MenuPart
from fsm_sites.spec.site import dump_spec

RECIPES: tuple[SiteRecipe, ...] = (
    SiteRecipe(
        "shop", "Northwind Store", "shop", "Home goods, shipped fast.",
        CatalogPart("products", "Products", (
            I("lamp", "Desk lamp", "$25 - warm LED light"), I("mug", "Coffee mug", "$9 - 350 ml stoneware"),
            I("chair", "Office chair", "$149 - mesh back"), I("rug", "Wool rug", "$89 - 120x170 cm"),
            I("kettle", "Electric kettle", "$39 - 1.7 l"), I("clock", "Wall clock", "$19 - silent")),
            ("Add to cart", "add"), "cart", "Cart", quantities=2, tabs=(
                ("overview", "Overview", (
                    "A dimmable lamp with a warm 2700 K LED and a weighted base.",
                    "A stoneware mug that keeps coffee warm and is safe in the dishwasher.",
                    "A desk chair with a breathable mesh back and adjustable arms.",
                    "A hand-tufted rug in natural, undyed wool.",
                    "A fast-boil kettle with automatic shut-off and a 360-degree base.",
                    "A wall clock with a silent sweep movement.")),
                ("specs", "Specs", (
                    "Height 45 cm - 8 W LED - USB-C power - 3 brightness levels.",
                    "350 ml - 9 cm tall - stoneware - microwave safe.",
                    "Seat height 42-52 cm - holds 120 kg - 5 wheels.",
                    "120 x 170 cm - 100% wool - 1 cm pile.",
                    "1.7 l - 2200 W - stainless steel - limescale filter.",
                    "30 cm face - 1 AA battery - glass front.")),
                ("reviews", "Reviews", (
                    "4.7 of 5 stars from 212 reviews: 'Bright, warm and steady.'",
                    "4.5 of 5 stars from 98 reviews: 'The right size for a big coffee.'",
                    "4.2 of 5 stars from 57 reviews: 'Comfortable for long days.'",
                    "4.8 of 5 stars from 31 reviews: 'Soft and thick.'",
                    "4.4 of 5 stars from 143 reviews: 'Boils in two minutes.'",
                    "4.6 of 5 stars from 76 reviews: 'Truly silent.'")))),
        forms=(FormPart("checkout", "Checkout", (
            F("text", "name", "Full name", ("Ada Lovelace",)), F("text", "address", "Street address", ("12 Elm St",)),
            F("select", "shipping", "Shipping", ("standard", "express")), F("checkbox", "gift", "Gift wrap")),
            "Place order", "place an order with express shipping and gift wrap", needs_collection=True,
            wanted_items=("lamp", "mug")),),
        search={"lamp": ("lamp",), "kitchen": ("mug", "kettle")},
        menu=MenuPart("account", "Account", (
            ("orders", "Your orders", "You have no open orders."),
            ("signout", "Sign out", "You are signed out. See you soon."))),
    ),
    SiteRecipe(
        "mail", "Swiftmail", "mail", "Your inbox, minus the noise.",
        CatalogPart("inbox", "Inbox", (
            I("m1", "Quarterly report", "From: finance@acme.io"), I("m2", "Lunch on Friday?", "From: sam@acme.io"),
            I("m3", "Your invoice #4411", "From: billing@cloudly.com"), I("m4", "Team offsite agenda", "From: hr@acme.io"),
),
            ("Star", "star"), "starred", "Starred", per_page=2, split=True),
        forms=(FormPart("compose", "Compose", (
            F("text", "to", "To", ("hr@acme.io",)), F("text", "subject", "Subject", ("Offsite",)),
            F("select", "priority", "Priority", ("normal", "high")), F("checkbox", "receipt", "Request read receipt")),
            "Send", "send an email to hr@acme.io about the offsite"),),
        folders=FoldersPart("box", "Mailbox", (("inbox", "Inbox"), ("archive", "Archive"), ("trash", "Trash")),
                            (("Archive", "archive"), ("Delete", "trash"), ("Move to inbox", "inbox")),
                            (("m3", "archive"), ("m2", "trash"))),
    ),
    SiteRecipe(
        "calendar", "DayPlanner", "calendar", "Plan your month.",
        CatalogPart("month", "December", (  # cards named by dates of one month: a month calendar
            I("mon", "Mon, Dec 7, 2026", "Team standup, 3 events"), I("tue", "Tue, Dec 8, 2026", "Dentist at 09:00"),
            I("wed", "Wed, Dec 9, 2026", "No events"), I("thu", "Thu, Dec 10, 2026", "Team offsite, 2 events")),
            ("Mark as busy", "block"), "busy", "Busy days", per_page=4),
        bookings=BookingsPart(
            "meetings", "Meetings", "New meeting",
            (F("select", "day", "Day", ("mon", "wed", "thu")), F("select", "time", "Time", ("09:00", "14:00")),
             F("checkbox", "remind", "Remind me")),
            ("day", "time"), "{it.day} at {it.time}", 2,
            (("book a meeting on Wed at 14:00 with a reminder", (("day", "wed"), ("time", "14:00"), ("remind", True))),
             ("one on Thu at 09:00 without", (("day", "thu"), ("time", "09:00"), ("remind", False))))),
        search={"team": ("mon", "thu"), "free": ("wed",)},
        modal=ModalPart("Clear day", "Cancel every event on this day?", "cleared", "Cleared days", ("tue",)),
    ),
    SiteRecipe(
        "bank", "Crestline Bank", "bank", "Banking that keeps up with you.",
        CatalogPart("accounts", "Accounts", (
            I("checking", "Everyday checking", "Balance $2,310.55"), I("savings", "High-yield savings", "Balance $12,004.10"),
            I("card", "Platinum card", "Due $412.00"), I("loan", "Car loan", "Remaining $8,950.00")),
            ("Pin to dashboard", "pin"), "pinned", "Dashboard", per_page=2),
        forms=(FormPart("transfer", "Transfer money", (
            F("select", "from", "From", ("checking", "savings")), F("select", "to", "To", ("savings", "card")),
            F("text", "amount", "Amount", ("50", "250")),
            F("tooltip", "limit", "Daily limit", ("You can move up to $5,000 a day between your accounts.",)),
            F("text", "memo", "Memo", ("rent",)), F("checkbox", "monthly", "Repeat monthly")),
            "Review transfer", "transfer 250 to the card with the memo 'rent'"),),
        wizard=WizardPart("bill", "Pay a bill", (
            (F("text", "pname", "Payee name", ("City Power",)), F("text", "acct", "Account number", ("99812",))),
            (F("text", "amount", "Amount", ("120",)), F("text", "date", "Payment date", ("06/13",))),
            (F("text", "code", "Security code", ("4821",)),)),
            "pay $120 to City Power from {item} on 06/13", from_items=("savings", "checking"),
            start_label="Pay a bill"),
        modal=ModalPart("Freeze", "Freeze this card?", "frozen", "Frozen cards", ("card",)),
        table=TablePart("activity", "Activity", (
            ("ref", "Reference", tuple((f"t{n}", f"#{10230 + n}") for n in range(1, 10))),
            ("date", "Date", (("d02", "Jun 2"), ("d03", "Jun 3"), ("d05", "Jun 5"), ("d08", "Jun 8"), ("d09", "Jun 9"),
                              ("d11", "Jun 11"), ("d12", "Jun 12"), ("d14", "Jun 14"), ("d15", "Jun 15"))),
            ("payee", "Payee", (("acme", "Acme Rentals"), ("blue", "Blue Bottle Coffee"), ("city", "City Power"),
                                ("fresh", "Fresh Market"), ("gym", "Gym Plus"), ("metro", "Metro Transit"),
                                ("north", "Northwind Store"), ("pixel", "Pixel Mobile"), ("sky", "SkyTrip"))),
            ("amount", "Amount", (("a0275", "$2.75"), ("a0450", "$4.50"), ("a2500", "$25.00"), ("a3900", "$39.00"),
                                  ("a6499", "$64.99"), ("a8620", "$86.20"), ("a12000", "$120.00"),
                                  ("a51200", "$512.00"), ("a145000", "$1,450.00")))),
            (("t1", "d02", "blue", "a0450"), ("t2", "d03", "city", "a12000"), ("t3", "d05", "north", "a2500"),
             ("t4", "d08", "acme", "a145000"), ("t5", "d09", "fresh", "a8620"), ("t6", "d11", "sky", "a51200"),
             ("t7", "d12", "gym", "a3900"), ("t8", "d14", "metro", "a0275"), ("t9", "d15", "pixel", "a6499")),
            ("-date", "date", "amount", "-amount", "payee"), 3,
            (("activity_top", "sort your activity by amount, highest first, and open the top transaction",
              "-amount", "t4"),
             ("activity_city", "open the City Power payment of Jun 3 in your activity", None, "t2"),
             ("activity_payee", "sort your activity by payee from A to Z and open the last transaction listed",
              "payee", "t6")),
            # payments over $500 can be flagged for review: two rows, so four flag states
            action=RowAction("flagged", "Flagged", ("Flag", "Unflag"), ("t4", "t6"), (
                ("activity_flag", "flag the largest payment in your activity for review", ("t4",)),)),
            placed=(("activity_smallest_first", "make your smallest payment, Metro Transit's $2.75, the first row "
                     "of your activity", "t8", 0),)),
    ),
    SiteRecipe(
        "travel", "SkyTrip", "travel", "Flights and hotels at fair prices.",
        CatalogPart("flights", "Flights", (
            I("par", "New York - Paris", "Tue 18:40, 7h 20m, $512"), I("tyo", "Los Angeles - Tokyo", "Wed 11:05, 11h 50m, $830"),
            I("lis", "Boston - Lisbon", "Fri 21:15, 6h 30m, $460"), I("rom", "Chicago - Rome", "Sat 16:00, 9h 45m, $640")),
            ("Save flight", "save"), "saved", "Saved trips", per_page=2),
        wizard=WizardPart("book", "Book a flight", (
            (F("text", "pax", "Passenger name", ("Lee Chen",)), F("text", "email", "Email", ("lee@mail.com",))),
            (F("radio", "seat", "Seat", ("aisle", "window")),),
            (F("checkbox", "bag", "Add a checked bag"),),
            (F("text", "cardno", "Card number", ("4242 4242 4242 4242",)), F("text", "zip", "Billing ZIP", ("10001",)))),
            "book a window seat on the {item} flight for Lee Chen with a checked bag and pay by card",
            from_items=("tyo", "par"), start_label="Book this flight"),
        search={"Paris": ("par",), "Europe": ("lis", "rom")},
        faq=FaqPart("help", "Help", (
            ("bags", "How much luggage can I bring?", "One cabin bag and one personal item are free."),
            ("change", "Can I change my flight?", "Changes are free up to 24 hours before departure."),
            ("refund", "How do I get a refund?", "Refunds take 5-7 days; our team handles each one.")),
            "Contact support"),
        ranking=RankPart("wishlist", "Wishlist", ("par", "lis", "rom"), (("rom", "par", "lis"), ("rom", "lis", "par"))),
    ),
    SiteRecipe(
        "settings", "Control Center", "settings", "Manage your account and devices.",
        CatalogPart("devices", "Devices", (
            I("phone", "Pixel phone", "Last seen today"), I("laptop", "Work laptop", "Last seen 2 days ago"),
            I("tablet", "Tablet", "Last seen in March")),
            ("Trust device", "trust"), "trusted", "Trusted devices", per_page=3),
        forms=(FormPart("password", "Change password", (
            F("text", "old", "Current password", ("hunter2",)), F("text", "new", "New password", ("Correct-Horse-9",)),
            F("checkbox", "signout", "Sign out other devices")),
            "Update password", "change the password to Correct-Horse-9 and sign out other devices"),),
        settings=SettingsPart("cfg", "Preferences", (
            ("privacy", "Privacy", (("location", "Share location"),)),
            ("display", "Display", (("dark", "Dark mode"),)),
            ("sound", "Sound", (("keys", "Keyboard clicks"),)))),
    ),
    SiteRecipe(
        "forum", "Threadly", "forum", "Conversations worth having.",
        CatalogPart("topics", "Latest topics", (
            I("t1", "Best budget keyboard?", "42 replies"), I("t2", "Rust vs Go for CLIs", "118 replies"),
            I("t3", "Show us your desk setup", "77 replies"), I("t4", "Weekly help thread", "9 replies"),
            I("t5", "Rules - read first", "pinned")),
            ("Follow", "follow"), "following", "Following", per_page=3, held=("t5",),
            confirm_remove="Stop following"),
        forms=(FormPart("newpost", "New topic", (
            F("text", "title", "Title", ("Ergonomic mice?",)), F("select", "board", "Board", ("general", "hardware")),
            F("checkbox", "notify", "Email me replies")),
            "Post", "post 'Ergonomic mice?' to the hardware board and get reply emails", validate=True),),
        search={"keyboard": ("t1",), "setup": ("t3", "t1")},
        modal=ModalPart("Report", "Report this topic?", "reported", "Reported", ("t2", "t4")),
    ),
    SiteRecipe(
        "files", "Filebox", "file_manager", "All your files, everywhere.",
        CatalogPart("files", "My files", (
            I("cv", "resume.pdf", "84 KB, Documents"), I("tax", "taxes-2025.xlsx", "1.2 MB, Finance"),
            I("pic", "beach.jpg", "3.4 MB, Photos"), I("song", "demo.mp3", "5.1 MB, Music"),
            I("deck", "pitch.pptx", "9.8 MB, Work"), I("notes", "notes.txt", "2 KB, Documents")),
            ("Star", "star"), "starred", "Starred files", per_page=3),
        forms=(FormPart("upload", "Upload", (
            F("text", "fname", "File name", ("report.docx", "photo.png")), F("select", "folder", "Folder", ("documents", "photos")),
            F("checkbox", "share", "Share with team")),
            "Upload", "upload photo.png to photos and share it with the team", confirm=False),),
        modal=ModalPart("Delete", "Move this file to the trash?", "trash", "Trash", ("tax", "deck")),
        search={"pdf": ("cv",), "work": ("deck", "tax")},
        stats=(("Starred files", "starred"), ("In the trash", "trash")),
    ),
    SiteRecipe(
        "recipes", "Pantry", "recipes", "Cook something good tonight.",
        CatalogPart("recipes", "Recipes", (
            I("soup", "Tomato soup", "25 min, vegan"), I("pasta", "Pesto pasta", "20 min"),
            I("curry", "Chickpea curry", "40 min, vegan"), I("cake", "Lemon cake", "1 h 10 min"),
            I("salad", "Greek salad", "15 min")),
            ("Save to cookbook", "save"), "cookbook", "Cookbook"),
        wizard=WizardPart("plan", "Meal plan", (
            (F("date", "day", "Day", ("2026-06-13", "2026-06-14")), F("radio", "meal", "Meal", ("lunch", "dinner"))),
            (F("slider", "servings", "Servings", ("1", "8", "4")), F("checkbox", "shop", "Add to shopping list"))),
            "plan Sunday dinner for 4 and add it to the shopping list"),
        search={"vegan": ("soup", "curry"), "quick": ("salad",)},
    ),
    SiteRecipe(
        "crm", "LeadDesk", "crm", "Close more deals.",
        CatalogPart("contacts", "Contacts", (
            I("ana", "Ana Ruiz", "Acme Corp - Lead"), I("ben", "Ben Okafor", "Globex - Qualified"),
            I("cho", "Cho Min", "Initech - Customer"), I("dev", "Dev Patel", "Umbrella - Lead")),
            ("Add to campaign", "add"), "campaign", "Campaign", per_page=2),
        forms=(FormPart("newcontact", "New contact", (
            F("text", "cname", "Name", ("Eva Stone",)), F("combobox", "company", "Company", ("Globex", "Initech", "Hooli")),
            F("select", "stage", "Stage", ("lead", "qualified", "customer")), F("checkbox", "vip", "VIP")),
            "Save contact", "add Eva Stone from Hooli as a VIP customer", validate=True),),
        settings=SettingsPart("crmset", "Workspace", (
            ("sync", "Sync", (("gmail", "Sync Gmail"), ("cal", "Sync calendar"))),)),
    ),
    SiteRecipe(
        "jobs", "HireHub", "job_board", "Find work you love.",
        CatalogPart("jobs", "Open roles", (
            I("fe", "Frontend engineer", "Remote - $120k"), I("ds", "Data scientist", "Berlin - EUR 85k"),
            I("pm", "Product manager", "NYC - $140k"), I("ux", "UX designer", "London - GBP 70k"),
            I("sre", "Site reliability engineer", "Remote - $150k"), I("qa", "QA analyst", "Austin - $90k"),
            I("ml", "Machine learning engineer", "Paris - EUR 95k"), I("sec", "Security analyst", "Remote - $130k"),
            I("devrel", "Developer advocate", "Toronto - CAD 110k"), I("ios", "iOS engineer", "NYC - $145k"),
            I("writer", "Technical writer", "Remote - $95k"), I("em", "Engineering manager", "London - GBP 110k")),
            ("Save job", "save"), "saved_jobs", "Saved jobs", per_page=12),  # one long list: it scrolls
        wizard=WizardPart("apply", "Apply", (
            (F("text", "aname", "Name", ("Rosa Diaz",)), F("text", "email", "Email", ("rosa@mail.com",))),
            (F("text", "resume", "Resume file", ("rosa_cv.pdf",)), F("checkbox", "cover", "Include cover letter")),
            (F("radio", "start", "Start date", ("now", "next_month")),)),
            "apply for the {item} role as Rosa Diaz with a cover letter, starting next month",
            from_items=("fe", "ux"), start_label="Apply for this job"),
        search={"remote": ("fe", "sre"), "design": ("ux",)},
    ),
    SiteRecipe(
        "food", "QuickBite", "food_delivery", "Hot food at your door.",
        CatalogPart("menu", "Menu", (
            I("pizza", "Margherita pizza", "$14 - Luigi's"), I("ramen", "Tonkotsu ramen", "$16 - Ichiban"),
            I("tacos", "Fish tacos", "$12 - La Playa"), I("wings", "Hot wings", "$11 - Wing Co")),
            ("Add to basket", "add"), "basket", "Basket", quantities=2),
        forms=(FormPart("order", "Checkout", (
            F("text", "addr", "Delivery address", ("5 Pine Ave",)), F("radio", "tip", "Tip", ("10", "15", "20")),
            F("checkbox", "contactless", "Contactless delivery")),
            "Place order", "order to 5 Pine Ave with a 20% tip and contactless delivery", needs_collection=True),),
        settings=SettingsPart("account", "Account", (
            ("diet", "Dietary", (("veg", "Vegetarian only"),)), ("promo", "Offers", (("deals", "Email deals"),)))),
        search={"spicy": ("wings", "ramen"), "fish": ("tacos",)},
    ),
)

SITES_DIR = Path(__file__).parent / "sites"


def write_all(directory: Path = SITES_DIR) -> list[Path]:
    """Compose every recipe and write it as YAML; returns the written paths."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for recipe in RECIPES:
        path = directory / f"{recipe.name}.yaml"
        dump_spec(compose(recipe), path)
        paths.append(path)
    return paths


if __name__ == "__main__":
    for written in write_all(Path(sys.argv[1]) if len(sys.argv) > 1 else SITES_DIR):
        print(written)
