"""Suites: each generates samples, renders videos, lists conditions and prompts, and scores."""
