"""The desktop sandbox: an X display of its own (Xvfb + openbox), XTEST input, capture,
and a windowed Chromium on it."""
