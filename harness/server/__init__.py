"""The env server (`cua env-server`) and its client (`RemoteEnv`, the `remote` provider).

- ``protocol``: the wire format, OpenEnv's envelopes carrying our typed results;
- ``sessions``: sessions over an ``EnvProvider`` (``LocalEnvs`` by default);
- ``app``: the aiohttp routes (HTTP and WebSocket) behind a token;
- ``cli``: ``cua env-server``;
- ``client``: ``RemoteEnv`` (an ``Env``) and ``RemoteEnvs`` (``--provider remote:URL``);
- ``errors``: what the client raises, by who is at fault.

See docs/serving.md.
"""
