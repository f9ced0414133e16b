"""A small trip planner with every value-carrying widget (a slider with every stop, a
slider with labelled stops, a date picker bound to an enum of dates, one bound to an int
day of a month, a drag-to-reorder list), shared by the engine, server and browser tests."""

from __future__ import annotations

import yaml

from fsm_sites.spec.site import SiteSpec

PLANNER_YAML = """
name: planner
title: Trip Planner
domain: travel
start_page: plan
variables:
  - {name: budget, type: int, min: 0, max: 10}
  - {name: stars, type: int, min: 1, max: 5, default: 1}
  - {name: day, type: enum, values: ["", "2026-06-12", "2026-06-13", "2026-06-20"]}
  - {name: day_open, type: bool}
  - {name: back, type: int, min: 0, max: 30}
  - {name: back_open, type: bool}
  - {name: stops, type: list, item: {type: enum, values: [paris, rome, lisbon], labels: {paris: Paris, rome: Rome, lisbon: Lisbon}}, max_len: 3, default: [paris, rome, lisbon]}
pages:
  - id: plan
    title: Plan a trip
    elements:
      - {id: budget, kind: slider, label: Budget (hundreds), bind: budget}
      - {id: stars, kind: slider, label: Hotel class, bind: stars, options: [{value: "1", label: Any}, {value: "3", label: 3 stars}, {value: "5", label: 5 stars}]}
      - {id: day, kind: date_picker, label: Departure, bind: day, open_when: day_open}
      - {id: back, kind: date_picker, label: Return, bind: back, month: "2026-07", open_when: back_open}
      - {id: stop, kind: sortable, label: "{it}", repeat: stops}
transitions:
  - {id: set_budget, page: plan, element: budget, event: change, effects: [{set: budget, to: value}], description: "set the budget to {value}00"}
  - {id: set_stars, page: plan, element: stars, event: change, effects: [{set: stars, to: value}], description: "ask for {value}-star hotels"}
  - {id: open_day, page: plan, element: day, event: open, when: "not day_open", effects: [{set: day_open, to: true}], description: open the departure calendar}
  - {id: pick_day, page: plan, element: day, event: pick, effects: [{set: day, to: value}, {set: day_open, to: false}], description: "leave on {day}"}
  - {id: open_back, page: plan, element: back, event: open, when: "not back_open", effects: [{set: back_open, to: true}], description: open the return calendar}
  - {id: pick_back, page: plan, element: back, event: pick, effects: [{set: back, to: value}, {set: back_open, to: false}], description: "come back on July {back}"}
  - {id: move_stop, page: plan, element: stop, event: move, effects: [{move: stops}], description: "drag {it} to another place"}
goals:
  - id: trip
    description: "a budget of 700, leaving on June 13, Rome first"
    conditions: ["budget == 7", "day == '2026-06-13'", "stops == ['rome', 'paris', 'lisbon']"]
  - id: back_and_stars
    description: "3-star hotels, back on July 4, Lisbon first then Paris"
    conditions: ["stars == 3", "back == 4", "stops == ['lisbon', 'paris', 'rome']"]
"""


def planner_spec() -> SiteSpec:
    return SiteSpec.model_validate(yaml.safe_load(PLANNER_YAML))


TEMPLATES_YAML = """
name: templates
title: Acme Mail
domain: mail
start_page: inbox
types:
  - {name: report, type: enum, values: [q2, q3], labels: {q2: Q2 report, q3: Q3 report}}
variables:
  - {name: tab, type: enum, values: [overview, numbers]}
  - name: meetings
    type: list
    max_len: 3
    item:
      type: record
      fields:
        - {name: day, type: enum, values: [mon, tue, wed], labels: {mon: Monday, tue: Tuesday, wed: Wednesday}}
        - {name: time, type: enum, values: ["09:00", "14:00"]}
    default: [{day: wed, time: "09:00"}, {day: mon, time: "14:00"}, {day: tue, time: "09:00"}]
  - {name: order, type: enum, values: [day, -day, time]}
  - {name: open_msg, type: enum, values: ["", m1, m2]}
  - {name: starred, type: set, item: {type: enum, values: [m1, m2]}, max_len: 2}
pages:
  - id: inbox
    title: Inbox
    elements:
      - {id: go_month, kind: link, label: June, section: nav}
      - {id: go_meetings, kind: link, label: Meetings, section: nav}
      - {id: m1, kind: card, label: Quarterly report, description: "From: finance@acme.io"}
      - {id: m2, kind: card, label: "Lunch on Friday?", description: "From: sam@acme.io"}
      - {id: body_m1, kind: text, label: "Hi all, the Q2 numbers are in.", visible_when: "open_msg == 'm1'"}
      - {id: body_m2, kind: text, label: "Tacos at noon?", visible_when: "open_msg == 'm2'"}
      - {id: star, kind: button, label: Star, visible_when: "open_msg != ''"}
  - id: month
    title: June
    elements:
      - {id: go_inbox, kind: link, label: Inbox, section: nav}
      - {id: d3, kind: card, label: "2026-06-03", description: Dentist}
      - {id: d12, kind: card, label: "Fri, Jun 12, 2026", description: Team offsite}
      - {id: d30, kind: card, label: "June 30, 2026", description: Rent}
      - {id: q2, kind: button, label: Open the Q2 report}
  - id: meetings
    title: "Meetings ({count(meetings)})"
    elements:
      - {id: back_inbox, kind: link, label: Inbox, section: nav}
      - {id: row, kind: text, label: "{it.day} at {it.time}", repeat: meetings, sort: order}
      - {id: cancel, kind: button, label: Cancel, repeat: meetings}
  - id: report
    title: "{item}"
    params: [{name: item, type: report}]
    elements:
      - {id: back, kind: link, label: Back to June, section: header}
      - {id: t_over, kind: tab, label: Overview}
      - {id: t_num, kind: tab, label: Numbers}
      - {id: over, kind: text, label: "Revenue grew in every region.", visible_when: "tab == 'overview'"}
      - {id: nums, kind: text, label: "Revenue $4.2M, costs $3.1M", visible_when: "tab == 'numbers'"}
transitions:
  - {id: open_m1, page: inbox, element: m1, effects: [{set: open_msg, to: "'m1'"}], description: open the report}
  - {id: open_m2, page: inbox, element: m2, effects: [{set: open_msg, to: "'m2'"}], description: open the lunch mail}
  - {id: star_it, page: inbox, element: star, when: "open_msg == 'm1'", effects: [{add: starred, item: "'m1'"}], description: star it}
  - {id: star_it2, page: inbox, element: star, when: "open_msg == 'm2'", effects: [{add: starred, item: "'m2'"}], description: star it}
  - {id: to_month, page: inbox, element: go_month, target: month, description: open June}
  - {id: to_inbox, page: month, element: go_inbox, target: inbox, description: open the inbox}
  - {id: open_q2, page: month, element: q2, target: report, args: {item: "'q2'"}, description: open the Q2 report}
  - {id: report_back, page: report, element: back, target: month, effects: [{clear: tab}], description: go back to June}
  - {id: tab_over, page: report, element: t_over, effects: [{set: tab, to: "'overview'"}], description: show the overview}
  - {id: tab_num, page: report, element: t_num, effects: [{set: tab, to: "'numbers'"}], description: show the numbers}
  - {id: to_meetings, page: inbox, element: go_meetings, target: meetings, description: open the meetings}
  - {id: meetings_back, page: meetings, element: back_inbox, target: inbox, description: open the inbox}
  - {id: sort_meetings, page: meetings, element: row, event: sort, effects: [{set: order, to: value}], description: "sort the meetings by {value}"}
  - {id: cancel_meeting, page: meetings, element: cancel, effects: [{remove: meetings, item: it}], description: "cancel {it.day}'s meeting"}
  - {id: open_d12, page: month, element: d12, target: inbox, effects: [{set: open_msg, to: "'m1'"}], description: open the offsite day}
goals:
  - {id: star_lunch, description: star the lunch mail, conditions: ["'m2' in starred"]}
  - {id: latest_first, description: list the meetings latest day first, page: meetings, conditions: ["order == '-day'"]}
  - {id: q2_numbers, description: see the Q2 report's numbers, page: report(q2), conditions: ["tab == 'numbers'"]}
"""


def templates_spec() -> SiteSpec:
    return SiteSpec.model_validate(yaml.safe_load(TEMPLATES_YAML))
