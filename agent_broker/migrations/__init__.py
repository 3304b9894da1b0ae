"""The database schema over time: the registry of every feature's models (models.py), the
Alembic migrations (env.py, versions/) and running them (migrate.py). It sits above the
features, since it imports all of their models; features import only agent_broker.db."""
