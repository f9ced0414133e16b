"""The interactive elements a browser page shows: role, label, value and box.

One JavaScript pass over the page (a few ms) lists what an agent could act on in the
viewport, in reading order, for observation modes that show elements instead of (or
beside) pixels. Two kinds of pages:

- pages that mark their live elements with ``data-el`` (the FSM sites' renderer, with
  ``data-kind``): each marked element is one entry, named by its visible label (a field's
  label for inputs and dropdowns), with the open dropdown's options and a radio group's
  options as entries of their own (a combobox's shown suggestions too; a menu, accordion or
  tooltip is its toggle or trigger, with "expanded" or the tip's text as its value); a
  slider is one entry (its value shown), a date
  picker its field plus, while open, each day; a sortable list's item is its drag handle
  (``id=position``), named by the item; a sortable table's heading is a button
  (``id=order``, "Sort by Day", its ``aria-sort`` as the value), a paged table's pager
  button a button (``id=pageN``, "Page 2" / "Next page", ``current`` for the page shown);
- any other page: elements by HTML and ARIA semantics (links, buttons, inputs, selects,
  text areas, ``role=button|link|tab|option|radio|checkbox|menuitem|textbox``,
  ``onclick``), plus elements a script made clickable that show the pointer cursor
  (``cursor: pointer`` where their parent does not: MiniWoB's links are such spans),
  named by their accessible name (``aria-label``, associated ``<label>``, text (as written:
  a CSS ``text-transform`` does not change it), for a text box the text just before it
  (``<label>Username</label><input>``), placeholder, title, value); a control inside another
  control is left out.

On both, each entry says where a person sees it: ``row``, the table or list row it sits in
(a table row's ``aria-label``, else its first cell's text; a list row's text), unless the
entry names the row itself, and ``section``, the part of the page outside the main content
(navigation, sidebar, footer, dialog). The prompt shows the row always and the section
where a label repeats (``harness.prompts.shown_names``).

Boxes are viewport CSS pixels (the screenshot's pixels at device scale 1).
"""

from __future__ import annotations

from sandboxes.base import UIElement

#: Lists the page's interactive elements (see the module docstring). Returns plain objects.
ELEMENTS_JS = r"""(() => {
  const clean = (s) => (s || "").replace(/\s+/g, " ").trim().slice(0, 120);
  // The text as written, as an accessible name is: a CSS text-transform (a theme's
  // upper-case buttons) does not change it.
  const text = (el) => getComputedStyle(el).textTransform === "none" ? el.innerText : el.textContent;
  const visible = (el) => {
    const r = el.getBoundingClientRect();
    if (r.width < 1 || r.height < 1) return null;
    if (r.bottom <= 0 || r.right <= 0 || r.top >= innerHeight || r.left >= innerWidth) return null;
    const s = getComputedStyle(el);
    if (s.visibility === "hidden" || s.display === "none" || el.closest("[hidden], [inert]")) return null;
    return r;
  };
  // Where an element sits, as a person sees it: the row it acts on (a table row: its
  // aria-label or its first cell's own text; a list row: its text or title), unless the
  // element names the row itself, and the part of the page outside the main content.
  const ownText = (node) => [...node.childNodes].filter((n) => n.nodeType === 3).map((n) => n.textContent).join(" ");
  const rowOf = (el, label) => {
    const row = el.closest("tr, .repeat-row");
    if (!row || row.closest("thead")) return null;  // a table's heading is no row
    let name = row.getAttribute("aria-label") || "";
    const cell = row.tagName === "TR" ? row.querySelector("td, th") : null;
    if (!name && cell && !cell.contains(el)) name = clean(ownText(cell)) || text(cell);
    const title = name ? null : row.querySelector('[data-kind="text"], .title');
    if (title && !title.contains(el)) name = text(title);
    name = clean(name);
    return name && name !== clean(label) ? name : null;
  };
  const sectionOf = (el) => {
    if (el.closest("[role=dialog], dialog, .modal")) return "dialog";
    if (el.closest("nav:not(.pager), [role=navigation], .topnav")) return "navigation";
    if (el.closest("aside, .sidebar, [role=complementary]")) return "sidebar";
    if (el.closest("footer, [role=contentinfo]")) return "footer";
    return null;
  };
  const out = [];
  const add = (el, id, role, label, value) => {
    const r = visible(el);
    if (!r) return;
    const disabled = !!(el.disabled || el.getAttribute("aria-disabled") === "true"
                        || el.classList.contains("disabled"));
    out.push({id: String(id), role, label: clean(label), row: rowOf(el, label), section: sectionOf(el),
              value: value == null ? null : clean(value),
              x: Math.round(r.left), y: Math.round(r.top), width: Math.round(r.width),
              height: Math.round(r.height), enabled: !disabled});
  };
  // The text a person reads just before a field that has no label of its own ("Username"
  // in <p><label>Username</label><input></p>), without its colon.
  const textBefore = (el) => {
    let node = el.previousSibling;
    while (node && ((node.nodeType === 3 && !node.textContent.trim()) || node.nodeName === "BR")) node = node.previousSibling;
    if (!node || !(node.nodeType === 3 || ["LABEL", "SPAN", "B", "STRONG"].includes(node.nodeName))) return "";
    if (node.nodeType === 1 && node.querySelector("input, button, select, textarea")) return "";
    return clean(node.textContent).replace(/:$/, "").trim();
  };
  const fieldLabel = (el) => {
    const field = el.closest(".field");
    const label = field && field.querySelector(".field-label");
    return label ? text(label) : "";
  };
  const marked = document.querySelectorAll("[data-el]");
  if (marked.length) {
    const roles = {button: "button", link: "link", text_input: "textbox", select: "combobox",
                   checkbox: "checkbox", radio: "radio", tab: "tab", list_item: "listitem",
                   card: "card", pagination: "button", text: "text"};
    for (const el of marked) {
      const kind = el.getAttribute("data-kind") || "button";
      if (kind === "text") continue;
      const id = el.getAttribute("data-el");
      const options = el.querySelectorAll("[data-value]");
      if (kind === "select") {
        const toggle = el.querySelector(".dd-toggle") || el;
        add(toggle, id, "combobox", fieldLabel(el), text(toggle).replace("▾", ""));
        for (const o of options) add(o, id + "=" + o.getAttribute("data-value"), "option", text(o), null);
      } else if (kind === "radio" && options.length) {
        for (const o of options) {
          add(o, id + "=" + o.getAttribute("data-value"), "radio", text(o),
              o.getAttribute("aria-checked") === "true" ? "checked" : null);
        }
      } else if (kind === "menu" || kind === "accordion" || kind === "tooltip") {
        // A widget: its toggle (or a tooltip's trigger) is the entry, open or not; the
        // elements inside an open one are entries of their own.
        const part = el.querySelector(":scope > [data-ev], :scope > .tip-trigger") || el;
        const open = el.getAttribute("data-open") === "true";
        const tip = kind === "tooltip" && open ? el.querySelector(".tip-bubble") : null;
        add(part, id, kind === "tooltip" ? "tooltip" : "button", text(part).replace(/[▾▴]/g, ""),
            tip ? text(tip).replace("×", "") : open ? "expanded" : null);
      } else if (kind === "combobox") {
        const field = el.querySelector("input");
        add(field, id, "combobox", fieldLabel(el), field.value);
        for (const o of options) add(o, id + "=" + o.getAttribute("data-value"), "option", text(o), null);
      } else if (kind === "slider") {
        add(el, id, "slider", fieldLabel(el), el.getAttribute("aria-valuetext"));
      } else if (kind === "date_picker") {
        const toggle = el.querySelector(".date-toggle") || el;
        add(toggle, id, "combobox", fieldLabel(el), text(toggle));
        for (const o of options) {
          add(o, id + "=" + o.getAttribute("data-value"), "gridcell", o.getAttribute("aria-label") || text(o),
              o.getAttribute("aria-pressed") === "true" ? "selected" : null);
        }
      } else if (kind === "sortable") {
        const handle = el.querySelector(".drag-handle") || el, title = el.querySelector(".title");
        add(handle, id + "=" + el.getAttribute("data-value"), "listitem", text(title || el),
            "position " + (Number(el.getAttribute("data-value")) + 1));
      } else if (kind === "sort") {
        add(el, id + "=" + el.getAttribute("data-value"), "button", "Sort by " + text(el).replace(/[▲▼↕]/g, ""),
            el.closest("th") ? el.closest("th").getAttribute("aria-sort") : null);
      } else if (kind === "page") {
        add(el, id + "=page" + el.getAttribute("data-value"), "button", el.getAttribute("aria-label") || text(el),
            el.getAttribute("aria-current") === "page" ? "current" : null);
      } else if (kind === "text_input") {
        add(el, id, "textbox", fieldLabel(el) || el.placeholder, el.value);
      } else if (kind === "checkbox") {
        const box = el.querySelector("input");
        add(el, id, "checkbox", text(el), box && box.checked ? "checked" : null);
      } else {
        const title = el.querySelector(".title");
        add(el, id, roles[kind] || "button", text(title || el), null);
      }
    }
    return out;
  }
  const selector = "a[href], button, input:not([type=hidden]), textarea, select, [onclick], "
    + "[contenteditable=true], [role=button], [role=link], [role=tab], [role=option], "
    + "[role=radio], [role=checkbox], [role=menuitem], [role=textbox]";
  const semantic = new Set(document.querySelectorAll(selector));
  for (const el of document.body.querySelectorAll("*")) {
    if (semantic.has(el) || !el.innerText || getComputedStyle(el).cursor !== "pointer") continue;
    const parent = el.parentElement;
    if (!parent || getComputedStyle(parent).cursor !== "pointer") semantic.add(el);
  }
  const candidates = [...document.body.querySelectorAll("*")].filter((el) => semantic.has(el));
  const chosen = new Set(candidates);
  let n = 0;
  for (const el of candidates) {
    let up = el.parentElement, inner = false;
    while (up) { if (chosen.has(up)) { inner = true; break; } up = up.parentElement; }
    if (inner) continue;
    const tag = el.tagName.toLowerCase(), type = (el.getAttribute("type") || "").toLowerCase();
    let role = el.getAttribute("role");
    if (!role) {
      if (tag === "a") role = "link";
      else if (tag === "select") role = "combobox";
      else if (tag === "textarea" || el.isContentEditable) role = "textbox";
      else if (tag === "input") role = ["checkbox", "radio"].includes(type) ? type
        : ["button", "submit", "reset"].includes(type) ? "button" : "textbox";
      else role = "button";
    }
    const labelled = el.labels && el.labels.length ? el.labels[0].innerText : "";
    const textual = role === "textbox" || role === "combobox";
    const label = el.getAttribute("aria-label") || labelled
      || (textual ? textBefore(el) : text(el)) || el.getAttribute("placeholder") || el.getAttribute("title")
      || (type === "button" || type === "submit" ? el.value : "") || el.getAttribute("alt") || "";
    const value = textual ? el.value : (role === "checkbox" || role === "radio")
      ? (el.checked ? "checked" : null) : null;
    n += 1;
    add(el, el.id || "e" + n, role, label, value);
  }
  return out;
})()"""


def parse_elements(raw: object) -> list[UIElement]:
    """The extractor's answer as typed elements (entries that do not fit are dropped)."""
    if not isinstance(raw, list):
        return []
    out = []
    for item in raw:
        if isinstance(item, dict):
            try:
                out.append(UIElement.model_validate(item))
            except ValueError:
                continue
    return out
