"""A Tk window that logs what reaches it (pointer, wheel, keys, an entry's text) as JSON
lines to the file named by argv[1]; the desktop sandbox tests read the log."""

from __future__ import annotations

import json
import sys
import tkinter as tk

log = open(sys.argv[1], "a", encoding="utf-8", buffering=1)  # noqa: SIM115 - lives as long as the app


def record(**fields: object) -> None:
    log.write(json.dumps(fields) + "\n")


root = tk.Tk()
root.title("probe")
root.geometry("600x400+0+0")
entry = tk.Entry(root, width=50)
entry.pack(pady=4)
canvas = tk.Canvas(root, width=580, height=300, bg="white")
canvas.pack()
entry.bind("<Return>", lambda e: record(kind="text", text=entry.get()))
entry.bind("<Control-a>", lambda e: record(kind="combo", keys="ctrl+a"))
entry.bind("<FocusIn>", lambda e: record(kind="focus"))
# Tk 8.6 binds no <Button-6>: it turns wheel buttons 6/7 (left/right) into shift + 4/5.
WHEEL = {(4, False): "up", (5, False): "down", (4, True): "left", (5, True): "right",
         (6, False): "left", (7, False): "right"}


def pressed(e: tk.Event) -> None:
    shifted = bool(int(e.state) & 1)
    if (e.num, shifted) in WHEEL:
        record(kind="wheel", direction=WHEEL[(int(e.num), shifted)])
    else:
        record(kind="press" if e.num == 1 else "right", x=e.x_root, y=e.y_root)


canvas.bind("<ButtonPress>", pressed)
canvas.bind("<ButtonRelease-1>", lambda e: record(kind="release", x=e.x_root, y=e.y_root))
canvas.bind("<Double-Button-1>", lambda e: record(kind="double", x=e.x_root, y=e.y_root))


def placed(_event: object) -> None:
    """Where the widgets lie on the screen, each time the window manager moves the window."""
    record(kind="ready", entry=[entry.winfo_rootx(), entry.winfo_rooty()],
           canvas=[canvas.winfo_rootx(), canvas.winfo_rooty()])


root.bind("<Configure>", placed)
canvas.bind("<Map>", placed)
root.mainloop()
