"""Word lists the random generator draws site content from, one entry per domain."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DomainVocab:
    domain: str
    brands: tuple[str, ...]
    catalog: str  # list title
    collection: str
    action: tuple[str, str]  # (button label, verb)
    items: tuple[str, ...]
    blurbs: tuple[str, ...]
    form: tuple[str, str, str]  # (title, submit label, goal verb phrase)
    selects: tuple[tuple[str, str, tuple[str, ...]], ...]  # (id, label, options)
    texts: tuple[tuple[str, str, tuple[str, ...]], ...]  # (id, label, accepted values)
    checks: tuple[tuple[str, str], ...]
    wizard: tuple[str, str]  # (title, goal phrase)
    toggles: tuple[tuple[str, str], ...]
    modal: tuple[str, str]  # (button label, question)
    bookings: tuple[str, str] = ("Bookings", "New booking")  # (list title, form title)


PEOPLE = ("Ada Park", "Li Wei", "Omar Haddad", "June Mori", "Sofia Rossi", "Kofi Mensah")
EMAILS = ("ada@mail.com", "li@corp.io", "omar@web.net", "june@home.org")

VOCABS: tuple[DomainVocab, ...] = (
    DomainVocab("shop", ("Cobalt Market", "Nook & Co", "Brightcart", "Oakline"), "Products", "Cart",
                ("Add to cart", "add"),
                ("Desk lamp", "Tea kettle", "Yoga mat", "Backpack", "Bluetooth speaker", "Wool scarf",
                 "Cast-iron pan", "Plant pot"),
                ("$19", "$24", "$35", "$49", "$12", "$89"),
                ("Checkout", "Place order", "check out"),
                (("shipping", "Shipping", ("standard", "express", "pickup")), ("pay", "Payment", ("card", "paypal"))),
                (("name", "Full name", PEOPLE[:2]), ("zip", "ZIP code", ("10001", "94107"))),
                (("gift", "Gift wrap"), ("news", "Subscribe to news")),
                ("Return an item", "return an item"),
                (("dark", "Dark mode"), ("deals", "Email deals"), ("sms", "SMS updates")),
                ("Remove", "Remove this product?"),
                ("Deliveries", "Schedule a delivery")),
    DomainVocab("mail", ("Postbox", "Inkwell Mail", "Letterly"), "Inbox", "Starred", ("Star", "star"),
                ("Weekly sync notes", "Invoice due", "Welcome aboard", "Flight receipt", "Re: budget",
                 "Party on Friday", "Security alert", "Newsletter"),
                ("from sam@corp.io", "from billing@shop.com", "from hr@corp.io", "from no-reply@air.com"),
                ("Compose", "Send", "send an email"),
                (("priority", "Priority", ("normal", "high")), ("folder", "Save copy in", ("sent", "drafts"))),
                (("to", "To", EMAILS[:2]), ("subject", "Subject", ("Hello", "Budget"))),
                (("receipt", "Request read receipt"), ("later", "Send later")),
                ("Set up an auto-reply", "set up an auto-reply"),
                (("threads", "Group by conversation"), ("preview", "Show previews"), ("alerts", "Desktop alerts")),
                ("Archive", "Archive this message?"),
                ("Scheduled emails", "Schedule an email")),
    DomainVocab("bank", ("Harbor Bank", "Evercredit", "Pillar Finance"), "Accounts", "Dashboard",
                ("Pin", "pin"),
                ("Checking", "Savings", "Credit card", "Mortgage", "Brokerage", "Travel wallet"),
                ("balance $1,204", "balance $8,950", "due $310", "balance $420"),
                ("Transfer", "Review transfer", "transfer money"),
                (("from", "From account", ("checking", "savings")), ("speed", "Speed", ("standard", "instant"))),
                (("amount", "Amount", ("25", "100", "500")), ("memo", "Memo", ("rent", "gift"))),
                (("save_payee", "Save this payee"), ("notify", "Notify recipient")),
                ("Open an account", "open a new account"),
                (("paperless", "Paperless statements"), ("alerts", "Balance alerts"), ("2fa", "Two-factor login")),
                ("Freeze", "Freeze this account?"),
                ("Scheduled payments", "Schedule a payment")),
    DomainVocab("travel", ("Wayfarer", "JetNest", "Roamly"), "Hotels", "Wishlist", ("Save", "save"),
                ("Harbor Inn", "Alpine Lodge", "City Loft", "Beach House", "Garden Hotel", "Desert Camp"),
                ("from $120/night", "from $89/night", "from $210/night", "from $64/night"),
                ("Book a room", "Reserve", "book a room"),
                (("room", "Room type", ("single", "double", "suite")), ("board", "Meals", ("none", "breakfast"))),
                (("guest", "Guest name", PEOPLE[2:4]), ("nights", "Nights", ("1", "3"))),
                (("late", "Late check-out"), ("parking", "Parking spot")),
                ("Plan a trip", "plan a trip"),
                (("metric", "Metric units"), ("price_alerts", "Price alerts"), ("eco", "Eco stays only")),
                ("Hide", "Hide this hotel?"),
                ("Reservations", "New reservation")),
    DomainVocab("forum", ("Agora", "Hearth Forum", "Chatterbox"), "Threads", "Bookmarks", ("Bookmark", "bookmark"),
                ("Intro thread", "Help with setup", "Show and tell", "Feature requests", "Off-topic",
                 "Bug reports", "Announcements"),
                ("12 replies", "87 replies", "pinned", "3 new"),
                ("New thread", "Post", "start a thread"),
                (("board", "Board", ("general", "help", "meta")), ("tag", "Tag", ("question", "idea"))),
                (("title", "Title", ("Need help", "Idea")),),
                (("watch", "Watch replies"), ("anon", "Post anonymously")),
                ("Edit profile", "edit your profile"),
                (("digest", "Weekly digest"), ("mentions", "Mention alerts"), ("avatars", "Show avatars")),
                ("Report", "Report this thread?"),
                ("Events", "New event")),
    DomainVocab("recipes", ("Saucepan", "Greenfork", "Crumb"), "Recipes", "Favourites", ("Favourite", "save"),
                ("Lentil soup", "Banana bread", "Fried rice", "Caesar salad", "Shakshuka", "Ramen", "Tiramisu"),
                ("20 min", "45 min", "vegan", "1 h"),
                ("Submit a recipe", "Submit", "submit a recipe"),
                (("course", "Course", ("starter", "main", "dessert")), ("level", "Difficulty", ("easy", "hard"))),
                (("rname", "Recipe name", ("Pho", "Pancakes")), ("time", "Minutes", ("15", "30"))),
                (("veg", "Vegetarian"), ("share", "Share publicly")),
                ("Plan meals", "plan your meals"),
                (("metric", "Metric units"), ("tips", "Cooking tips"), ("ads", "Show ads")),
                ("Hide", "Hide this recipe?"),
                ("Meal plan", "Plan a meal")),
    DomainVocab("jobs", ("Careerly", "Jobbit", "Worknest"), "Jobs", "Saved jobs", ("Save job", "save"),
                ("Backend developer", "Nurse", "Accountant", "Barista", "Data analyst", "Teacher", "Electrician"),
                ("remote", "full-time", "part-time", "contract"),
                ("Post a job", "Publish", "post a job"),
                (("type", "Job type", ("full_time", "part_time")), ("region", "Region", ("us", "eu", "apac"))),
                (("role", "Role", ("Designer", "Driver")), ("salary", "Salary", ("50000", "80000"))),
                (("remote", "Remote OK"), ("urgent", "Urgent hire")),
                ("Apply", "apply for a job"),
                (("alerts", "Job alerts"), ("visible", "Profile visible"), ("weekly", "Weekly summary")),
                ("Not interested", "Hide this job?"),
                ("Interviews", "Book an interview")),
    DomainVocab("food", ("Dashdish", "Forkful", "Munch"), "Restaurants", "Basket", ("Add", "add"),
                ("Sushi set", "Burrito", "Pad thai", "Burger", "Falafel wrap", "Pho bowl", "Pizza slice"),
                ("$9", "$13", "$11", "$15"),
                ("Checkout", "Pay now", "order food"),
                (("when", "Deliver", ("asap", "later")), ("tip", "Tip", ("0", "10", "15"))),
                (("addr", "Address", ("1 Main St", "9 Oak Rd")),),
                (("cutlery", "Include cutlery"), ("leave", "Leave at door")),
                ("Schedule an order", "schedule an order"),
                (("veg", "Vegetarian only"), ("promos", "Promotions"), ("sms", "SMS updates")),
                ("Hide", "Hide this dish?"),
                ("Scheduled orders", "Schedule an order")),
)
