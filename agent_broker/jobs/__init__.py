"""Scheduled jobs: plain functions, run by `agent-broker jobs run` or inside `serve`."""
