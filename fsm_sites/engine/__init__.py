"""The pure engine: the ``Machine`` (events, transitions, goals), the goal-directed
search and its heuristic, the full state graph, compiled tables and what a page
shows of a state (``views``). No browser, server or I/O."""
