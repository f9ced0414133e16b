"""Isolated UI sandboxes (browser, desktop) behind one ``Sandbox`` protocol.

Knows nothing of FSMs, tasks or models."""
