"""A native desktop rendering of an FSM site: a Tk application for one session.

    python -m fsm_sites.serving.tkapp --site URL --session ID --state-file PATH [--geometry WxH+X+Y]

It shows the session's current page (``GET /s/{id}/view`` on the site app,
``fsm_sites.render.page_model``) as Tk widgets and sends every UI event to the site app as the
browser's page does (``SitePage``, ``POST /s/{id}/event``), so the server's machine judges
each step exactly as it judges the browser's: the same verdicts, the same goals. After
each event it shows the page of the state the server holds. Like the browser's page, it
holds only the session id, never a token of the control API (docs/security.md).

Widgets: buttons, links, tabs, cards, list items and pagination are buttons (click);
a text input is an entry that sends its text on Enter (like the web page); a checkbox
sends check/uncheck; a select is a list box (select with the item's value); a radio
group is radio buttons (click with the option's value); a slider is a scale (its release
sends ``change`` with the stop it is at); a date picker is a button (``open``) and, while
open, a button per day (``pick``); a sortable list is a column of rows whose handles are
dragged (``move`` with "from>to", the same rule as the web page); a data table's sort and
pager are rows of buttons (``sort`` with the order, ``page`` with the number). Widgets: a menu or an
accordion is a toggle button (click), a tooltip a label that sends hover when the pointer
enters it, a combobox an entry (input on Enter) over a list box of suggestions (select); a
stepper is text.

``--state-file`` is the app's own state, rewritten (atomically) after every render,
focus change and keystroke: the session seq shown, the page, the focused field and every
widget's root-relative box. The desktop task reads it to wait for the new state to be
shown and to locate elements for its oracle; the agent never sees it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tkinter as tk
from typing import Any

from fsm_sites.engine.state import UIEvent
from fsm_sites.serving.client import SitePage
from fsm_sites.serving.sessions import SessionError

CLICKABLE = {"button", "link", "tab", "card", "list_item", "pagination"}
#: Widgets per row in the main area (the page must fit the screen: nothing scrolls).
COLUMNS = 3


class SiteApp:
    """One Tk window showing one session's page."""

    def __init__(self, page: SitePage, state_file: str, geometry: str) -> None:
        self.page, self.state_file = page, state_file
        self.loop = asyncio.new_event_loop()
        self.root = tk.Tk(className="cua-fsm")
        self.root.geometry(geometry)
        self.root.option_add("*Font", "DejaVuSans 11")
        self.frame: tk.Frame | None = None
        self.widgets: list[tuple[dict[str, Any], tk.Widget, str | None]] = []
        self.entries: dict[tuple[str, str | None], tk.Entry] = {}
        self.view: dict[str, Any] = {}
        self.seq = -1

    def call(self, coro: Any) -> Any:
        return self.loop.run_until_complete(coro)

    def refresh(self) -> None:
        data = self.call(self.page.view())
        self.seq, self.view = int(data["seq"]), data["view"]
        self.render()

    def send(self, element: str, event: str, value: str | None) -> None:
        try:
            self.call(self.page.send_event(UIEvent(self.view["page"], element, event, value)))
        except SessionError:
            pass  # a stale or refused event: show the state the server holds, as the page does
        self.refresh()

    # ---- rendering ---------------------------------------------------------------------
    def render(self) -> None:
        if self.frame is not None:
            self.frame.destroy()
        self.widgets, self.entries = [], {}
        view = self.view
        self.root.title(f"{view['title']} - {view['site']}")
        frame = self.frame = tk.Frame(self.root, padx=12, pady=8)
        frame.pack(fill="both", expand=True)
        tk.Label(frame, text=view["title"], font="DejaVuSans 16 bold", anchor="w").pack(fill="x")
        if view.get("body"):
            tk.Label(frame, text=view["body"], anchor="w", justify="left", wraplength=900).pack(fill="x")
        if view.get("toast"):
            tk.Label(frame, text=view["toast"], bg="#fff3c4", anchor="w").pack(fill="x", pady=4)
        nav = [e for e in view["elements"] if e["section"] == "nav"]
        rest = [e for e in view["elements"] if e["section"] != "nav"]
        if nav:
            bar = tk.Frame(frame, pady=4)
            bar.pack(fill="x")
            for spec in nav:
                self._widget(bar, spec).pack(side="left", padx=2)
        grid = tk.Frame(frame)
        grid.pack(fill="both", expand=True)
        for index, spec in enumerate(_runs(rest)):
            widget = self._sortable(grid, spec) if isinstance(spec, list) else self._widget(grid, spec)
            widget.grid(row=index // COLUMNS, column=index % COLUMNS, sticky="nw", padx=4, pady=3)
        self.root.update_idletasks()
        self.root.after_idle(self.write_state)

    def _widget(self, parent: tk.Misc, spec: dict[str, Any]) -> tk.Widget:
        kind = spec["kind"]
        fg = _fg(spec)
        if kind in CLICKABLE:
            text = spec["label"] + (f"\n{spec['description']}" if spec.get("description") else "")
            widget: tk.Widget = tk.Button(parent, text=text, fg=fg, justify="left",
                                          relief="flat" if kind == "link" else "raised",
                                          command=lambda: self.send(spec["id"], "click", spec["value"]))
        elif kind == "text_input":
            widget = self._entry(parent, spec)
        elif kind == "checkbox":
            var = tk.BooleanVar(value=spec["checked"])
            widget = tk.Checkbutton(parent, text=spec["label"], variable=var, fg=fg,
                                    command=lambda: self.send(spec["id"], "check" if var.get() else "uncheck", None))
        elif kind == "select":
            widget = self._listbox(parent, spec)
        elif kind == "radio":
            widget = self._radios(parent, spec)
        elif kind in ("menu", "accordion", "tooltip", "combobox"):
            widget = self._widget_kind(parent, spec, fg)
        elif kind == "slider":
            widget = self._slider(parent, spec)
        elif kind == "date_picker":
            widget = self._date_picker(parent, spec)
        elif kind in ("sort", "pager"):
            widget = self._choices(parent, spec, "sort" if kind == "sort" else "page")
        else:
            widget = tk.Label(parent, text=spec["label"], fg=fg, justify="left", wraplength=300)
        self.widgets.append((spec, widget, None))
        if spec.get("error"):  # an invalid field: its message under it, in red
            box = tk.Frame(parent)
            widget.pack(in_=box, fill="x")
            tk.Label(box, text=spec["error"], fg="#c5221f", anchor="w").pack(fill="x")
            widget.lift(box)
            return box
        return widget

    def _entry(self, parent: tk.Misc, spec: dict[str, Any]) -> tk.Widget:
        box = tk.Frame(parent)
        tk.Label(box, text=spec["label"], anchor="w", fg=_fg(spec)).pack(fill="x")
        entry = tk.Entry(box, width=28)
        entry.insert(0, spec.get("text", ""))
        entry.pack(fill="x")
        entry.bind("<Return>", lambda _e: self.send(spec["id"], "input", entry.get()))
        entry.bind("<KeyRelease>", lambda _e: self.write_state())
        entry.bind("<FocusIn>", lambda _e: self.root.after_idle(self.write_state))
        self.entries[(spec["id"], spec["value"])] = entry
        self.widgets.append((spec, entry, "field"))
        return box

    def _listbox(self, parent: tk.Misc, spec: dict[str, Any]) -> tk.Widget:
        box = tk.Frame(parent)
        tk.Label(box, text=f"{spec['label']}: {spec.get('text', '')}", anchor="w", fg=_fg(spec)).pack(fill="x")
        options = spec.get("options", [])
        listbox = tk.Listbox(box, height=len(options), exportselection=False, activestyle="none")
        for option in options:
            listbox.insert("end", option["label"])
        listbox.pack(fill="x")

        def chosen(_event: object) -> None:
            picked = listbox.curselection()
            if picked:
                self.send(spec["id"], "select", options[picked[0]]["value"])

        listbox.bind("<<ListboxSelect>>", chosen)
        self.widgets.append((spec, listbox, "listbox"))
        return box

    def _radios(self, parent: tk.Misc, spec: dict[str, Any]) -> tk.Widget:
        box = tk.Frame(parent)
        options = spec.get("options", [])
        if not options:
            var = tk.BooleanVar(value=bool(spec["checked"]))
            tk.Radiobutton(box, text=spec["label"], variable=var, value=True,
                           command=lambda: self.send(spec["id"], "click", spec["value"])).pack(anchor="w")
            return box
        tk.Label(box, text=spec["label"], anchor="w", fg=_fg(spec)).pack(fill="x")
        choice = tk.StringVar(value=(spec["checked"] or [""])[0])
        for option in options:
            button = tk.Radiobutton(box, text=option["label"], variable=choice, value=option["value"],
                                    command=self._sender(spec["id"], "click", option["value"]))
            button.pack(anchor="w")
            self.widgets.append((spec, button, "option:" + option["value"]))
        return box

    def _widget_kind(self, parent: tk.Misc, spec: dict[str, Any], fg: str) -> tk.Widget:
        """A menu or an accordion is a toggle button (its items, shown while it is open, are
        elements of their own); a tooltip a label that sends hover when the pointer enters
        it while closed, and shows its text while open; a combobox an entry and a list."""
        kind, is_open = spec["kind"], spec.get("open", False)
        if kind in ("menu", "accordion"):
            mark = "▴" if is_open else "▾"
            return tk.Button(parent, text=f"{spec['label']} {mark}", fg=fg,
                             command=self._sender(spec["id"], "click", None))
        if kind == "tooltip":
            text = f"ⓘ {spec['label']}" + (f"\n{spec['description']}" if is_open else "")
            label = tk.Label(parent, text=text, fg=fg, justify="left", wraplength=300)
            if not is_open:
                label.bind("<Enter>", lambda _e: self.send(spec["id"], "hover", None))
            return label
        box = tk.Frame(parent)
        entry_box = self._entry(box, spec)
        entry_box.pack(fill="x")
        self._listbox(box, spec).pack(fill="x")
        return box

    def _slider(self, parent: tk.Misc, spec: dict[str, Any]) -> tk.Widget:
        """A scale over the stops' places; releasing it sends the stop it is at (if new)."""
        box = tk.Frame(parent)
        stops = spec.get("options", [])
        values = [o["value"] for o in stops]
        at = values.index(spec["text"]) if spec["text"] in values else 0
        tk.Label(box, text=f"{spec['label']}: {stops[at]['label'] if stops else ''}", anchor="w").pack(fill="x")
        scale = tk.Scale(box, from_=0, to=max(len(values) - 1, 0), orient="horizontal", showvalue=False,
                         length=240, resolution=1)
        scale.set(at)
        scale.pack(fill="x")

        def released(_event: object) -> None:
            index = int(scale.get())
            if 0 <= index < len(values) and index != at:
                self.send(spec["id"], "change", values[index])

        scale.bind("<ButtonRelease-1>", released)
        self.widgets.append((spec, scale, "slider"))
        return box

    def _date_picker(self, parent: tk.Misc, spec: dict[str, Any]) -> tk.Widget:
        """The field (a button: ``open``) and, while open, a button per day one may pick."""
        box = tk.Frame(parent)
        tk.Label(box, text=spec["label"], anchor="w").pack(fill="x")
        chosen = next((o["label"] for o in spec.get("options", []) if o["value"] == spec["text"]), "Choose a date")
        field = tk.Button(box, text=chosen, command=self._sender(spec["id"], "open", None))
        field.pack(fill="x")
        self.widgets.append((spec, field, None))
        if spec.get("open"):
            days = tk.Frame(box)
            days.pack(fill="x")
            for n, option in enumerate(spec.get("options", [])):
                button = tk.Button(days, text=option["label"], command=self._sender(spec["id"], "pick", option["value"]))
                button.grid(row=n // 2, column=n % 2, sticky="we")
                self.widgets.append((spec, button, "option:" + option["value"]))
        return box

    def _choices(self, parent: tk.Misc, spec: dict[str, Any], event: str) -> tk.Widget:
        """A label and a button per option, each sending ``event`` with its value (a table's
        sort, or its pager: Previous, the page numbers, Next)."""
        box = tk.Frame(parent)
        tk.Label(box, text=f"{spec['label']}:", anchor="w").pack(side="left")
        for option in spec.get("options", []):
            button = tk.Button(box, text=option["label"], command=self._sender(spec["id"], event, option["value"]),
                               relief="sunken" if option["value"] == spec.get("text") else "raised")
            button.pack(side="left", padx=1)
            self.widgets.append((spec, button, "option:" + option["value"]))
        return box

    def _sortable(self, parent: tk.Misc, copies: list[dict[str, Any]]) -> tk.Widget:
        """A sortable list's copies as rows in one column; dragging a row's handle and
        releasing it sends ``move`` with "from>to" (``to``: the other rows whose middle is
        above the release point), as the web page does."""
        box = tk.Frame(parent)
        handles: list[tk.Label] = []
        for index, spec in enumerate(copies):
            row = tk.Frame(box, relief="groove", borderwidth=1)
            row.pack(fill="x", pady=1)
            handle = tk.Label(row, text="::", cursor="fleur", width=3)
            handle.pack(side="left")
            tk.Label(row, text=spec["label"], anchor="w").pack(side="left", fill="x")
            handle.bind("<ButtonRelease-1>", self._dropper(copies, handles, index))
            handles.append(handle)
            self.widgets.append((spec, handle, "handle"))
        return box

    def _dropper(self, copies: list[dict[str, Any]], handles: list[tk.Label], src: int) -> Any:
        return lambda event: self._dropped(copies, handles, src, event.y_root)

    def _dropped(self, copies: list[dict[str, Any]], handles: list[tk.Label], src: int, y_root: int) -> None:
        middles = [h.master.winfo_rooty() + h.master.winfo_height() // 2 for h in handles]
        dst = sum(1 for i, middle in enumerate(middles) if i != src and middle < y_root)
        if dst != src:
            self.send(copies[src]["id"], "move", f"{src}>{dst}")

    def _sender(self, element: str, event: str, value: str | None) -> Any:
        return lambda: self.send(element, event, value)

    # ---- the app's own state -----------------------------------------------------------
    def write_state(self) -> None:
        focus = self.root.focus_get()
        elements = []
        for spec, widget, part in self.widgets:
            if not widget.winfo_exists():
                continue
            entry: dict[str, Any] = {"id": spec["id"], "value": spec["value"], "kind": spec["kind"],
                                     "part": part, "box": _box(widget)}
            if part == "field":
                entry["text"] = widget.get()  # type: ignore[attr-defined]
                entry["focused"] = widget is focus
                entry["selected"] = bool(widget.selection_present())  # type: ignore[attr-defined]
            if part == "slider":
                entry["stops"] = [[o["value"], *_scale_point(widget, i)] for i, o in enumerate(spec.get("options", []))]
                entry["at"] = _scale_point(widget, int(widget.get()))  # type: ignore[attr-defined]
            if part == "listbox":
                entry["items"] = [[o["value"], *_item_box(widget, i)]
                                  for i, o in enumerate(spec.get("options", []))]
            elements.append(entry)
        state = {"seq": self.seq, "page": self.view.get("page"), "pid": os.getpid(),
                 "viewable": bool(self.root.winfo_viewable()), "elements": elements}
        tmp = f"{self.state_file}.tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(state, fh)
        os.replace(tmp, self.state_file)


def _fg(spec: dict[str, Any]) -> str:
    """Grey for a control drawn disabled: its events still reach the server, and fire nothing."""
    return "#888888" if spec["disabled"] else "#000000"


def _box(widget: tk.Widget) -> list[int]:
    return [widget.winfo_rootx(), widget.winfo_rooty(), widget.winfo_width(), widget.winfo_height()]


def _runs(specs: list[dict[str, Any]]) -> list[dict[str, Any] | list[dict[str, Any]]]:
    """The page's elements, the copies of each sortable list gathered into one list."""
    out: list[dict[str, Any] | list[dict[str, Any]]] = []
    for spec in specs:
        last = out[-1] if out else None
        if spec["kind"] == "sortable" and isinstance(last, list) and last[0]["id"] == spec["id"]:
            last.append(spec)
        else:
            out.append([spec] if spec["kind"] == "sortable" else spec)
    return out


def _scale_point(scale: Any, index: int) -> list[int]:
    """Root coordinates of a scale's slider when it is at ``index``."""
    x, y = scale.coords(index)
    return [scale.winfo_rootx() + int(x), scale.winfo_rooty() + int(y)]


def _item_box(listbox: Any, index: int) -> list[int]:
    x, y, w, h = listbox.bbox(index) or (0, 0, 0, 0)
    return [listbox.winfo_rootx() + x, listbox.winfo_rooty() + y, w, h]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Show an FSM site session as a Tk app.")
    parser.add_argument("--site", required=True, help="the site server's site app URL (the page's origin)")
    parser.add_argument("--session", required=True, help="the session id")
    parser.add_argument("--state-file", required=True, help="where the app writes its own state")
    parser.add_argument("--geometry", default="1000x720+0+0", help="Tk window geometry")
    args = parser.parse_args(argv)
    app = SiteApp(SitePage(args.site, args.session), args.state_file, args.geometry)
    app.refresh()
    app.root.bind("<Map>", lambda _e: app.write_state())
    app.root.mainloop()


if __name__ == "__main__":
    main()
