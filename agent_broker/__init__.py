"""agent-broker: a marketplace broker for automated agents."""

__version__ = "0.1.0"
RELEASE_TAG = f"v{__version__}"
