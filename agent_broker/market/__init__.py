"""Public pages: the feed and each handle's reputation, as server-rendered HTML."""
