"""A small site with every element kind, shared by the renderer and server tests."""

from __future__ import annotations

from pathlib import Path

import yaml

from fsm_sites.spec.site import SiteSpec, load_spec

TINY_SHOP = Path(__file__).resolve().parents[2] / "fsm_sites" / "library" / "examples" / "tiny_shop.yaml"

WIDGETS_YAML = """
name: widgets
title: Widget Works
domain: settings
start_page: general
variables:
  - {name: newsletter, type: bool}
  - {name: city, type: enum, values: ["", Paris, Oslo]}
  - {name: size, type: enum, values: [s, m, l]}
  - {name: theme, type: enum, values: [light, dark]}
  - {name: page_no, type: int, min: 1, max: 2}
pages:
  - id: general
    title: General settings
    body: Change how the app behaves.
    elements:
      - {id: tab_general, kind: tab, label: General, section: header}
      - {id: tab_items, kind: tab, label: Items, section: header}
      - {id: newsletter, kind: checkbox, label: Send me the newsletter, bind: newsletter}
      - {id: city, kind: text_input, label: City, placeholder: Type a city, bind: city}
      - id: size
        kind: select
        label: Size
        bind: size
        options: [{value: s, label: Small}, {value: m, label: Medium}, {value: l, label: Large}]
      - id: theme
        kind: radio
        label: Theme
        bind: theme
        options: [{value: light, label: Light}, {value: dark, label: Dark}]
      - {id: help, kind: link, label: Help, section: footer, distractor: true}
  - id: items
    title: Items
    elements:
      - {id: tab_general, kind: tab, label: General, section: header}
      - {id: tab_items, kind: tab, label: Items, section: header}
      - {id: alpha, kind: list_item, label: Alpha, description: first item, visible_when: [{var: page_no, value: 1}]}
      - {id: beta, kind: list_item, label: Beta, description: second item, visible_when: [{var: page_no, value: 2}]}
      - {id: pg1, kind: pagination, label: "1"}
      - {id: pg2, kind: pagination, label: "2"}
  - id: details
    title: Item details
    kind: modal
    parent: items
    elements:
      - {id: close, kind: button, label: Close}
transitions:
  - {id: to_items, page: general, element: tab_items, target: items, description: open the items tab}
  - {id: stay_general, page: general, element: tab_general, description: open the general tab}
  - {id: to_general, page: items, element: tab_general, target: general, description: open the general tab}
  - {id: stay_items, page: items, element: tab_items, description: open the items tab}
  - {id: sub, page: general, element: newsletter, event: check, effects: [{op: set, var: newsletter, value: true}], description: subscribe}
  - {id: unsub, page: general, element: newsletter, event: uncheck, effects: [{op: set, var: newsletter, value: false}], description: unsubscribe}
  - {id: type_city, page: general, element: city, event: input, values: [Paris, Oslo], effects: [{op: set, var: city, value: $value}], description: "type $value as the city"}
  - {id: pick_size, page: general, element: size, event: select, effects: [{op: set, var: size, value: $value}], description: choose size $value}
  - {id: pick_theme, page: general, element: theme, effects: [{op: set, var: theme, value: $value}], description: choose the $value theme}
  - {id: page1, page: items, element: pg1, effects: [{op: set, var: page_no, value: 1}], description: go to page 1}
  - {id: page2, page: items, element: pg2, effects: [{op: set, var: page_no, value: 2}], description: go to page 2}
  - {id: open_alpha, page: items, element: alpha, target: details, description: open Alpha}
  - {id: open_beta, page: items, element: beta, target: details, description: open Beta}
  - {id: close, page: details, element: close, target: items, description: close the details}
goals:
  - id: oslo_dark
    description: set the city to Oslo with the dark theme and the newsletter on
    page: general
    conditions: [{var: city, value: Oslo}, {var: theme, value: dark}, {var: newsletter, value: true}, {var: size, value: l}]
  - {id: see_beta, description: open the second item, page: details, conditions: [{var: page_no, value: 2}]}
"""


def widgets_spec() -> SiteSpec:
    return SiteSpec.model_validate(yaml.safe_load(WIDGETS_YAML))


def tiny_shop() -> SiteSpec:
    return load_spec(TINY_SHOP)
