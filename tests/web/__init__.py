"""Tests of the browser participant: its library in Chromium, its page end to end."""
