"""Database access: engine, per-request sessions, models base, migrations."""
