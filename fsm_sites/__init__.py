"""FSM-synthesized websites: spec, pure engine, renderer, site server, library, generator
and task synthesis. Imports nothing from ``sandboxes`` or ``trainers``."""
