"""Serving a site: the aiohttp site server and its control app, per-episode sessions
and their step verdicts, the site client, and the native Tk app."""
