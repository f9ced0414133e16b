"""The browser sandbox: Playwright + Chromium, one isolated context per episode."""
